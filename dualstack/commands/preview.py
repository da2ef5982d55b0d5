"""`dualstack preview`: the offline preview a reviewer reads on every pull request."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.settings import load_settings
from dualstack.errors import UsageError
from dualstack.offline.preview import build_preview, format_preview
from dualstack.repo.baseref import default_base
from dualstack.repo.stack_config import find_root, load_stack_config


def next_step(root: Path, stack: str, overrides: list[str]) -> int:
    """The ladder step above the stack's weight; UsageError when it is already at the top."""
    settings = load_settings(load_stack_config(root, stack, overrides))
    if settings.next_step is None:
        raise UsageError(f"stack {stack} is at {settings.ascend_weight}%: no ladder step left")
    return settings.next_step


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `preview` sub-command to the `dualstack` parser."""
    parser = subparsers.add_parser(
        "preview",
        help="what a migration step changes, against a git base (offline)",
        description="Render the stack from the working tree and from BASE's config, run the "
        "policy pack over the head (previous weight = BASE's), then print the weight move, the "
        "replica move, each policy's result, each object's change and a unified diff. Exit 0 "
        "ok, 1 a mandatory policy is violated, 2 the preview could not be built.",
    )
    parser.add_argument("--stack", default="prod", help="stack name (default: prod)")
    parser.add_argument(
        "--base",
        default=None,
        metavar="GIT_REF",
        help="compare with the stack config at this ref (default: merge base with the "
        "default branch; on that branch, HEAD)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key of the head, e.g. ascendWeight=20",
    )
    parser.add_argument(
        "--next",
        action="store_true",
        help="preview the next ladder step: the head with ascendWeight one step up",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run `dualstack preview`; returns the exit code (errors propagate to `cli.main`)."""
    root = find_root(Path(args.cwd) if args.cwd else None)
    base = args.base if args.base is not None else default_base(root)
    overrides = list(args.set)
    if args.next:
        overrides.append(f"ascendWeight={next_step(root, args.stack, overrides)}")
    preview = build_preview(root, args.stack, base, overrides)
    sys.stdout.write(format_preview(preview))
    violated = sorted({result.policy for result in preview.violations})
    if violated:
        print(f"policy check failed: {', '.join(violated)}", file=sys.stderr)
        for result in preview.violations:
            print(f"  {result.policy}: {result.message}", file=sys.stderr)
        return 1
    return 0
