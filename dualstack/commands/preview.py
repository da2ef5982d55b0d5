"""`dualstack preview`: the offline preview a reviewer reads on every pull request."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dualstack.cli import VERBS, examples
from dualstack.commands.machine import (
    add_json_file_argument,
    add_output_argument,
    document,
    emit,
    wants_json,
    write_json_file,
)
from dualstack.commands.output_paths import check_output_file
from dualstack.commands.stacks import add_service_argument, add_stack_argument, every_stack
from dualstack.errors import EXIT_FAILED, EXIT_OK, UsageError
from dualstack.offline.code_identity import running_code_is
from dualstack.offline.judge_client import base_judge, resolve_base, run_base_cli
from dualstack.repo.baseref import default_base
from dualstack.repo.stack_config import find_root, load_stack_config, require_code_beside

# The program (pulumi, pulumi-kubernetes) and the preview are imported only once the base's
# judge has started, so the base renders while this process loads and renders the head.


def next_step(
    root: Path, stack: str, overrides: list[str], service: str | None = None
) -> tuple[str, str]:
    """(the override moving the service one ladder step up, `ascendWeight=50` or
    `services.chat.ascendWeight=50`; the line a `--next` preview starts with, saying that it
    shows a step nobody has written yet, not the working tree). UsageError when the service
    is already at the top."""
    from components.settings import load_settings

    settings = load_settings(load_stack_config(root, stack, overrides), service=service)
    if settings.next_step is None:
        raise UsageError(f"stack {stack} is at {settings.ascend_weight}%: no ladder step left")
    note = (
        f"--next: previewing {settings.weight_key} {settings.next_step}, the ladder step after "
        f"the stack file's {settings.ascend_weight}%, as `dualstack promote --stack {stack}` "
        f"would write it; `dualstack preview --stack {stack}` previews the working tree as it is"
    )
    return f"{settings.weight_key}={settings.next_step}", note


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `preview` sub-command to the `dualstack` parser."""
    parser = subparsers.add_parser(
        "preview",
        help=VERBS["preview"],
        epilog=examples(
            "dualstack preview --stack prod                # against the merge base with main",
            "dualstack preview --stack prod --base main~1   # against, and judged by, any ref",
            "dualstack preview --stack prod --next         # the step promote would write",
            "dualstack preview --stack prod --owner-approved -o json --json-file preview.json",
        ),
        description="Render the stack from the working tree with this code, and have BASE's "
        "own code judge it: BASE's render, facts (previous weight, step limit, capacity, "
        "verified images, ...), envelope changes and policy pack. Prints the weight move, the "
        "replica move, the safety-envelope changes, each policy's result, the objects that "
        "change (the unchanged ones in one line; --diff lists every one) and a unified diff. "
        "Without -s, every stack is previewed. Exit 0 ok, 1 a mandatory policy is violated, "
        "2 the preview could not be built or the base cannot judge (never judged as a first "
        "deploy unless the stack file is absent at the base).",
    )
    add_stack_argument(parser, many=True)
    parser.add_argument(
        "--base",
        default=None,
        metavar="GIT_REF",
        help="the base that judges: its code, pack and stack config (default: merge base with "
        "the default branch; on that branch, HEAD)",
    )
    parser.add_argument(
        "--head",
        type=Path,
        metavar="DIR",
        help="run from a checkout of the base (-C): judge the head tree DIR, rendered by its "
        "own code and read as data (the pipelines); excludes --base, --set and --next",
    )
    parser.add_argument(
        "--head-objects",
        type=Path,
        metavar="DIR",
        help="with --head: the head's objects are DIR/<stack>.yaml, the untrusted job's "
        "render, read strictly as data (nothing of the head runs; the trusted pipeline)",
    )
    parser.add_argument(
        "--owner-approved",
        action="store_true",
        help="the change carries the owners' approval (pipelines: from the code host's "
        "review state only); an envelope change then passes if it moves no traffic",
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
    parser.add_argument(
        "--diff",
        action="store_true",
        help="list every object, unchanged ones too, and show each changed object whole "
        "(default, as `pulumi preview`: the unchanged ones in one line, 3 lines of context)",
    )
    add_service_argument(parser)
    add_output_argument(parser)
    add_json_file_argument(parser)
    parser.set_defaults(func=run)


def _previews(args: argparse.Namespace, root: Path) -> list[Any]:
    """One preview per stack, each judged by the base's code (started before the head renders)."""
    if args.head is not None:
        if args.base is not None or args.set or args.next:
            raise UsageError("--head judges the head tree as it is: no --base, --set or --next")
        from dualstack.offline.preview import build_preview_from_base

        head = find_root(args.head)
        return [
            build_preview_from_base(
                root, stack, head, args.owner_approved, args.service, _objects(args, stack)
            )
            for stack in every_stack(root, args.stack)
        ]
    if args.head_objects is not None:
        raise UsageError("--head-objects needs --head")
    ref = args.base if args.base is not None else default_base(root)
    if ref is None:
        from dualstack.offline.preview import require_base

        require_base(ref)
    base = resolve_base(root, ref)
    previews = []
    for stack in every_stack(root, args.stack):
        with base_judge(root, base, stack) as base_code:
            from dualstack.offline.preview import judged_preview

            overrides = list(args.set)
            if args.next:
                override, note = next_step(root, stack, overrides, args.service)
                overrides.append(override)
                print(note, file=sys.stderr)
            previews.append(
                judged_preview(
                    root, stack, base, base_code, overrides, args.owner_approved, args.service
                )
            )
    return previews


def _base_cli_argv(args: argparse.Namespace, root: Path) -> list[str]:
    """`preview --head ROOT ...` for the base's CLI: this run's stacks (the head's), approval,
    service and output options; paths absolute (the base's CLI runs in its own worktree)."""
    argv = ["preview", "--head", str(root.resolve())]
    for stack in every_stack(root, args.stack):
        argv += ["--stack", stack]
    if args.owner_approved:
        argv.append("--owner-approved")
    if args.service is not None:
        argv += ["--service", args.service]
    if args.diff:
        argv.append("--diff")
    argv += ["--output-format", args.output_format]
    if args.json_file is not None:
        argv += ["--json-file", str(args.json_file.resolve())]
    return argv


def _base_decides(args: argparse.Namespace, root: Path) -> int | None:
    """The base's own CLI's exit code for this preview when the base's code is not the
    running code (`judge_client.run_base_cli`: the base renders, judges, prints and sets the
    code), None when this process judges: `--head` (this is the base's checkout), `--set` /
    `--next` (a what-if of an edit not on disk, judged by the base's code through the
    protocol) or code that is the base's file for file."""
    if args.head is not None or args.set or args.next:
        return None
    ref = args.base if args.base is not None else default_base(root)
    if ref is None:
        from dualstack.offline.preview import require_base

        require_base(ref)
    base = resolve_base(root, ref)
    if running_code_is(root, base.commit):
        return None
    _refuse_unreadable_head(root, args)
    return run_base_cli(root, base, _base_cli_argv(args, root))


def _refuse_unreadable_head(root: Path, args: argparse.Namespace) -> None:
    """Read each previewed stack file of the head once, as the program would, before the base
    is asked: a bad key fails here in one line naming it (exit 2). This can only refuse; the
    verdict is the base's."""
    from components.settings import load_fleet

    for stack in every_stack(root, args.stack):
        load_fleet(load_stack_config(root, stack, []))


def _objects(args: argparse.Namespace, stack: str) -> list[dict[str, Any]] | None:
    """The untrusted render of `stack` under --head-objects, or None (render the head)."""
    if args.head_objects is None:
        return None
    from dualstack.ci.head_objects import HeadObjectsError, read_head_objects
    from dualstack.offline.judge import JudgeError

    try:
        return read_head_objects(args.head_objects / f"{stack}.yaml")
    except HeadObjectsError as exc:
        raise JudgeError(f"the untrusted render cannot be judged: {exc}") from None


def run(args: argparse.Namespace) -> int:
    """Run `dualstack preview`; returns the exit code (errors propagate to `cli.main`)."""
    root = find_root(Path(args.cwd) if args.cwd else None)
    check_output_file(args.json_file, "--json-file")
    if args.head is None:
        require_code_beside(root)
    decided = _base_decides(args, root)
    if decided is not None:
        return decided
    previews = _previews(args, root)
    from dualstack.offline.preview import format_preview
    from dualstack.offline.preview_data import preview_data

    for index, preview in enumerate(previews):
        if not wants_json(args):
            sys.stdout.write(("\n" if index else "") + format_preview(preview, args.diff))
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
