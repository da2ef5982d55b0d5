"""`dualstack preview`: the offline preview a reviewer reads on every pull request."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.settings import load_settings
from dualstack.commands.machine import (
    add_json_file_argument,
    add_output_argument,
    document,
    emit,
    wants_json,
    write_json_file,
)
from dualstack.commands.output_paths import check_output_file
from dualstack.commands.stacks import add_stack_argument, every_stack
from dualstack.errors import EXIT_FAILED, EXIT_OK, UsageError
from dualstack.offline.preview import build_preview, format_preview
from dualstack.offline.preview_data import preview_data
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
        "replica move, each policy's result, each object's change and a unified diff. Without "
        "-s, every stack is previewed. Exit 0 ok, 1 a mandatory policy is violated, 2 the "
        "preview could not be built.",
    )
    add_stack_argument(parser, many=True)
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
    add_output_argument(parser)
    add_json_file_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run `dualstack preview`; returns the exit code (errors propagate to `cli.main`)."""
    root = find_root(Path(args.cwd) if args.cwd else None)
    base = args.base if args.base is not None else default_base(root)
    check_output_file(args.json_file, "--json-file")
    previews = []
    for stack in every_stack(root, args.stack):
        overrides = list(args.set)
        if args.next:
            overrides.append(f"ascendWeight={next_step(root, stack, overrides)}")
        previews.append(build_preview(root, stack, base, overrides))
    for index, preview in enumerate(previews):
        if not wants_json(args):
            sys.stdout.write(("\n" if index else "") + format_preview(preview))
        violated = sorted({result.policy for result in preview.violations})
        if violated:
            where = f" (stack {preview.stack})" if len(previews) > 1 else ""
            print(f"policy check failed{where}: {', '.join(violated)}", file=sys.stderr)
            for result in preview.violations:
                print(f"  {result.policy}: {result.message}", file=sys.stderr)
    passed = all(not preview.violations for preview in previews)
    doc = document("preview", passed=passed, stacks=[preview_data(p) for p in previews])
    write_json_file(args, doc)
    if wants_json(args):
        emit(doc)
    return EXIT_OK if passed else EXIT_FAILED
