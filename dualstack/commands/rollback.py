"""`dualstack rollback`: lower the Ascend weight at once (default 0%), always allowed."""

from __future__ import annotations

import argparse
from pathlib import Path

from components.settings import SettingsError, load_settings
from dualstack.commands.promote import add_pr_arguments, publish
from dualstack.emergency import instructions
from dualstack.gitops import check_ready_to_commit
from dualstack.gitref import default_base
from dualstack.pr_text import rollback_body, rollback_title
from dualstack.preview import build_preview, format_preview
from dualstack.project import find_root, load_stack_config
from dualstack.render import RenderError
from dualstack.stackfile import StackFileError, stack_path
from dualstack.validate import SchemaError
from dualstack.weights import change_weight, rollback_target


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rollback",
        help="lower ascendWeight to 0 (or --to a lower step) and print the fastest path",
        description="Set ascendWeight to 0 or a lower ladder step, with no gate (lowering is "
        "always allowed), the same way promote writes it. Prints the targeted `pulumi up` "
        "that applies only the traffic split, and the break-glass `kubectl patch` with its "
        "caveat. Exit 0 done (or already there), 2 error.",
    )
    parser.add_argument("--stack", default="prod", help="stack name (default: prod)")
    parser.add_argument(
        "--to", type=int, default=0, metavar="N", help="target ladder step (default: 0)"
    )
    add_pr_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    settings = load_settings(load_stack_config(root, args.stack))
    target = rollback_target(settings, args.to)
    if target == settings.ascend_weight:
        print(f"Stack {args.stack} is already at {target}% Ascend: nothing to roll back.")
        return 0
    branch = args.branch or f"dualstack/{args.stack}-rollback-{target}"
    if args.commit:
        check_ready_to_commit(root, stack_path(root, args.stack), branch)
    base = default_base(root)
    change = change_weight(root, args.stack, settings, target)
    print(
        f"Rolled back stack {args.stack}: Ascend weight {settings.ascend_weight}% -> "
        f"{target}% ({change.method})."
    )
    how = instructions(change.before, change.after, args.stack)
    print("\n".join(how))
    try:
        preview_text = format_preview(build_preview(root, args.stack, base))
    except (SettingsError, RenderError, SchemaError, StackFileError) as exc:
        preview_text = f"(no preview: {str(exc).splitlines()[0]})"
    title = rollback_title(change)
    notes = [f"Rollback, no gate: {settings.ascend_weight}% -> {target}%."]
    publish(args, root, branch, title, rollback_body(change, preview_text, how), notes)
    return 0
