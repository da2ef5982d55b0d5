"""`dualstack rollback`: lower the Ascend weight at once (default 0%), always allowed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.settings import SettingsError, load_settings
from dualstack.commands.arg_types import whole_number
from dualstack.commands.options import add_pr_arguments, commit_plan, policy_refusal, publish
from dualstack.commands.output_paths import check_output_file
from dualstack.offline.policy_run import PolicyResult, blocking
from dualstack.offline.preview import Side, build_preview, check_policies, format_preview
from dualstack.offline.render import RenderError, render
from dualstack.offline.schemas import SchemaError
from dualstack.repo.baseref import default_base
from dualstack.repo.stack_config import find_root, load_stack_config
from dualstack.repo.stackfile import StackFileError, stack_path
from dualstack.step.emergency import instructions
from dualstack.step.pr_text import rollback_body, rollback_title
from dualstack.step.publish import CommitPlan, choose_branch, commit_workspace
from dualstack.step.weights import change_weight, restore_stack_file, rollback_target


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rollback",
        help="lower ascendWeight to 0 (or --to a lower step) and print the fastest path",
        description="Set ascendWeight to 0 or a lower ladder step, with no gate (lowering is "
        "always allowed), the same way promote writes it. Prints the targeted `pulumi up` "
        "that applies only the traffic split, and the break-glass `kubectl patch` with its "
        "caveat. With --commit and no --branch, a taken branch name gets a -2, -3, ... "
        "suffix. Exit 0 done (or already there), 1 the lower weight breaks a mandatory policy "
        "the stack did not break before (file restored), 2 error.",
    )
    parser.add_argument("--stack", default="prod", help="stack name (default: prod)")
    parser.add_argument(
        "--to", type=whole_number, default=0, metavar="N", help="target ladder step (default: 0)"
    )
    add_pr_arguments(parser)
    parser.set_defaults(func=run)


def introduced_violations(
    head: Side, before: Side, before_weight: int, stack: str
) -> tuple[list[PolicyResult], int]:
    """(mandatory violations the rollback introduces, violations it merely carries over).

    Both sides are judged with the weight the rollback moves from as the previous weight, so
    the git base plays no part: a stale or missing base, or a violation the stack already
    had, never blocks an emergency rollback. Lowering the weight breaks no policy of the
    pack today; this is the net for one that would.
    """
    # `before.objects` are the deployed pod templates: a rollback only scales, no surge.
    after = blocking(check_policies(head, before_weight, stack, before.settings, before.objects))
    known = {
        (r.policy, r.resource)
        for r in blocking(
            check_policies(before, before_weight, stack, before.settings, before.objects)
        )
    }
    new = [v for v in after if (v.policy, v.resource) not in known]
    return new, len(after) - len(new)


def _render_side(root: Path, stack: str) -> Side | None:
    try:
        settings, objects = render(load_stack_config(root, stack), stack)
    except (SettingsError, RenderError):
        return None
    return Side(settings, objects)


def run(args: argparse.Namespace) -> int:
    user_root = find_root(Path(args.cwd) if args.cwd else None)
    rollback_target(load_settings(load_stack_config(user_root, args.stack)), args.to)
    check_output_file(args.body_file, "--body-file")
    plan = commit_plan(args, user_root)
    with commit_workspace(user_root, plan, args.stack) as root:
        return _rollback(args, root, plan)


def _rollback(args: argparse.Namespace, root: Path, plan: CommitPlan | None) -> int:
    """The rollback, written in `root` (the user's tree, or the default branch's worktree)."""
    settings = load_settings(load_stack_config(root, args.stack))
    target = rollback_target(settings, args.to)
    if target == settings.ascend_weight:
        print(f"Stack {args.stack} is already at {target}% Ascend: nothing to roll back.")
        return 0
    path = stack_path(root, args.stack)
    branch = args.branch or f"dualstack/{args.stack}-rollback-{target}"
    if plan is not None:
        chosen = choose_branch(root, branch, free_name=args.branch is None)
        if chosen != branch:
            print(f"Branch {branch} already exists (an earlier rollback?); using {chosen}.")
        branch = chosen
    base = default_base(root)
    before_side = _render_side(root, args.stack)
    original = path.read_bytes()
    change = change_weight(root, args.stack, settings, target)
    try:
        preview = build_preview(root, args.stack, base)
    except (SettingsError, RenderError, SchemaError, StackFileError) as exc:
        preview, preview_text = None, f"(no preview: {str(exc).splitlines()[0]})"
    else:
        preview_text = format_preview(preview)
    new, carried = [], 0
    if preview is not None and before_side is not None:
        new, carried = introduced_violations(
            preview.head, before_side, settings.ascend_weight, args.stack
        )
    if new:
        restore_stack_file(root, args.stack, original)
        stays = f"stack {args.stack} stays at {settings.ascend_weight}%"
        for line in policy_refusal(new, path.name, stays):
            print(f"error: {line}", file=sys.stderr)
        return 1
    print(
        f"Rolled back stack {args.stack}: Ascend weight {settings.ascend_weight}% -> "
        f"{target}% ({change.method})."
    )
    how = instructions(change.before, change.after, args.stack)
    print("\n".join(how))
    if carried:
        print(
            f"Note: {carried} mandatory policy violation(s) were already there before the "
            "rollback; they do not block it (see the preview)."
        )
    title = rollback_title(change)
    notes = [f"Rollback, no gate: {settings.ascend_weight}% -> {target}%."]
    commit = None if plan is None else (plan, branch, original)
    publish(args, root, commit, title, rollback_body(change, preview_text, how), notes)
    return 0
