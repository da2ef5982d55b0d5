"""`dualstack verify-precision`: run the precision check for a stack and, on pass, record its
image pair in the verification history `verifiedImages` (and the Ascend image as
`verifiedAscendImage`, the older single-image record) in `Pulumi.<stack>.yaml`.

The verification history is the evidence policy `precision-verified-before-promotion` judges
by, read from the BASE of every later change; this command, run by the verification job after
the check passed, is its only writer (docs/trust-model.md). The check uses the stack's
`precisionCheck` settings (flags override them) and labels its result with the stack's
images. Writing the file is the last step, after every line of output has been delivered:
on a mismatch, an error or a closed output pipe nothing is written.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

import precision_check as checker
from components.settings import load_settings
from components.settings.precision import PrecisionCheckSettings
from dualstack.cli import VERBS, examples
from dualstack.commands.machine import (
    add_output_argument,
    document,
    emit,
    human_text_to_stderr,
    wants_json,
)
from dualstack.commands.output_paths import REPORT_FIELDS, check_output_file, staged_reports
from dualstack.commands.prompts_file import check_prompts_file
from dualstack.commands.stacks import add_service_argument, add_stack_argument, one_stack
from dualstack.errors import UsageError
from dualstack.repo.lock import repo_lock
from dualstack.repo.stack_config import find_root, load_stack_config
from dualstack.repo.stackfile import StackFileError, set_config_values, stack_path
from precision_check.options import flag

KEY = "verifiedAscendImage"
HISTORY_KEY = "verifiedImages"
FLOOR = 90.0
"""%: the lowest match rate whose pass may be recorded for promotion without
--allow-low-threshold (the checker itself only needs a rate above 0)."""
CEILING = 10.0
"""Points: the largest accuracy tolerance whose pass may be recorded without
--allow-low-threshold (the checker takes up to 100)."""
MIN_PROMPTS = 20
"""Fewest prompts a recorded check compares (the built-in sets hold 24 and 100): one prompt,
or a handful, says little about a model (issue 34: a check of one prompt was evidence)."""
MIN_MAX_TOKENS = 16
"""Fewest tokens per answer a recorded comparison asks for (`--max-tokens`, default 64): with
one token every backend that starts alike matches. Not for `accuracy`, scored on the answer."""
MIN_PREFIX = {"chars": 16, "tokens": 8}
"""Shortest prefix a recorded `prefix` check requires (`--prefix-length`, default 32 chars)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify-precision",
        help=VERBS["verify-precision"],
        description="Run the precision check against the stack's two backends with the "
        f"stack's precisionCheck settings; on pass write {KEY} (the stack's current Ascend "
        "image) into Pulumi.<stack>.yaml, keeping its comments (a fleet member's "
        "services.<name>.verifiedImages / verifiedAscendImage, --service). --ascend must reach "
        "pods that run that image. Flags override the stack's settings.",
        epilog=examples(
            "dualstack verify-precision --stack prod \\\n"
            "--nvidia http://inference-service-nvidia:8000 "
            "--ascend http://inference-service-ascend:8000",
            before="Exit codes: 0 pass (image recorded), 1 mismatch or inconclusive, 2 could not "
            "complete; on 1 and 2 the stack file is unchanged. Evidence needs the built-in "
            f"minimums, which no flag lowers: at least {MIN_PROMPTS} prompts, --max-tokens at "
            f"least {MIN_MAX_TOKENS} (comparison modes), a prefix of at least "
            f"{MIN_PREFIX['chars']} chars or {MIN_PREFIX['tokens']} tokens; a check below them "
            "is refused before any prompt is sent (exit 2).",
        ),
    )
    add_stack_argument(parser)
    add_service_argument(parser)
    parser.add_argument(
        "--allow-low-threshold",
        action="store_true",
        help=f"record a pass even with a match rate below {FLOOR:g} %% or an accuracy tolerance "
        f"above {CEILING:g} points (printed as a warning)",
    )
    from_stack = {
        field: f"the stack's precisionCheck.{key}"
        for field, key in PrecisionCheckSettings.check_keys().items()
    }
    from_stack["prompts"] += ", else the built-in set"
    checker.add_arguments(parser, images=False, defaults=from_stack)
    parser.add_argument(
        "--json-file",
        dest="json_report",
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="same as --json FILE: write the checker's JSON report to FILE",
    )
    add_progress_argument(parser)
    add_output_argument(parser)
    parser.set_defaults(func=run)


def add_progress_argument(parser: argparse.ArgumentParser) -> None:
    """`--progress/--no-progress`: answers so far on stderr (default: when it is a terminal)."""
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the answers so far on stderr (default: only when stderr is a terminal)",
    )


def run_check(args: argparse.Namespace, *run_cli_args: Any) -> tuple[int, dict | None]:
    """`checker.run_cli(args, ...)` with progress when wanted; (exit code, the checker's JSON
    report or None when the run wrote none). The reports are staged (`staged_reports`): the
    JSON report is always kept, and put at --json FILE when given."""
    from precision_check.progress import Progress, reporting, wanted

    check_prompts_file(args)
    progress = Progress("precision check", "answers") if wanted(args.progress) else None
    with staged_reports(args, keep=("json_report",)) as staged:
        with reporting(progress):
            code = checker.run_cli(args, *run_cli_args)
        try:
            report = json.loads(staged["json_report"].read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = None
    return code, report


def check_threshold(options: checker.Options, given: Collection[str], allowed: bool) -> None:
    """Refuse to record a pass judged by a lax threshold unless `allowed`, and then warn on
    stderr: a `min_match_rate` below `FLOOR` (%) in the comparison modes, an
    `accuracy_tolerance` above `CEILING` (points) in the accuracy mode. `given` names the
    fields set by flags. Raises UsageError naming where the value came from."""
    if options.mode == "accuracy":
        field, key, value = "accuracy_tolerance", "accuracyTolerance", options.accuracy_tolerance
        lax = f"{value:g} points is above the {CEILING:g}-point ceiling"
        if value <= CEILING:
            return
    else:
        field, key, value = "min_match_rate", "minMatchRate", options.min_match_rate
        lax = f"{value:g} % is below the {FLOOR:g} % floor"
        if value >= FLOOR:
            return
    source = flag(field) if field in given else f"precisionCheck.{key}"
    if not allowed:
        raise UsageError(
            f"{source} {lax} for recording {KEY}; tighten it, or pass --allow-low-threshold"
        )
    print(f"warning: --allow-low-threshold: recording with {source} {lax}", file=sys.stderr)


def lacking(options: checker.Options, prompts: int, given: Collection[str]) -> list[str]:
    """What a check of `prompts` prompts with `options` lacks to be recorded as evidence (the
    built-in minimums `MIN_PROMPTS`, `MIN_MAX_TOKENS`, `MIN_PREFIX`), one phrase each naming
    where the value came from (`given`: the fields set by flags); [] when it has them all.
    No flag lowers them: a shorter check is `dualstack precision-check`'s, never evidence."""

    def source(field: str, key: str) -> str:
        return flag(field) if field in given else f"precisionCheck.{key}"

    found = []
    if prompts < MIN_PROMPTS:
        where = "--prompts" if "prompts" in given else "precisionCheck.prompts"
        found.append(f"{prompts} prompt{'s' * (prompts != 1)} in {where} (at least {MIN_PROMPTS})")
    if options.mode != "accuracy" and options.max_tokens < MIN_MAX_TOKENS:
        found.append(
            f"{source('max_tokens', 'maxTokens')} {options.max_tokens} (at least {MIN_MAX_TOKENS})"
        )
    least = MIN_PREFIX[options.prefix_unit]
    if options.mode == "prefix" and options.prefix_length < least:
        found.append(
            f"{source('prefix_length', 'prefixLength')} {options.prefix_length} "
            f"{options.prefix_unit} (at least {least})"
        )
    return found


def check_minimums(options: checker.Options, prompts: int, given: Collection[str]) -> None:
    """Raise UsageError saying what the check lacks (`lacking`), before any prompt is sent."""
    if missing := lacking(options, prompts, given):
        raise UsageError(
            f"not recorded: evidence needs the built-in minimums, and this check has "
            f"{', '.join(missing)}; {HISTORY_KEY} unchanged (dualstack precision-check runs a "
            "shorter check without recording it)"
        )


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    args.stack = one_stack(root, args.stack, "verify-precision")
    result: dict[str, Any] = {
        "stack": args.stack,
        "service": None,
        "recorded": False,
        "check": None,
    }
    with contextlib.ExitStack() as hold:
        with human_text_to_stderr(args):
            code = _verify(args, root, result, hold)
        return _record(args, root, result, code)


def _record(args: argparse.Namespace, root: Path, result: dict[str, Any], code: int) -> int:
    """Print the `-o json` document, then on a pass write the records (the caller holds the
    repository lock from the re-read of the stack file on); the exit code."""
    if wants_json(args) and result["check"] is not None:
        try:
            emit(document("verify-precision", **result))
        except BrokenPipeError:
            checker.discard_stdout()
            print(f"error: output closed (broken pipe); {KEY} unchanged", file=sys.stderr)
            return checker.EXIT_ERROR
    if code == checker.EXIT_PASS:
        where = f"services.{result['service']}." if result["service"] is not None else ""
        values = {
            f"{where}{HISTORY_KEY}": result["verifiedImages"],
            f"{where}{KEY}": result["ascendImage"],
        }
        set_config_values(root, args.stack, values)  # one write: both records or neither
    return code


def _verify(
    args: argparse.Namespace, root: Path, result: dict[str, Any], hold: contextlib.ExitStack
) -> int:
    """The check; on a pass, every line delivered and `result` filled, the file not yet
    written (the caller writes it last) and the repository lock taken into `hold` before the
    stack file is read again (`dualstack.repo.lock`: no other command writes it between that
    read and the record; the check itself runs unlocked). Returns the exit code."""
    settings = load_settings(load_stack_config(root, args.stack), service=args.service)
    result["service"] = settings.member
    image = settings.ascend.image
    base = {
        **settings.precision_check.check_fields(),
        "nvidia_image": settings.nvidia.image,
        "ascend_image": image,
    }
    try:
        options = checker.options_from_args(args, base)
    except checker.CheckError as exc:
        raise UsageError(str(exc)) from None
    check_threshold(options, set(vars(args)), args.allow_low_threshold)
    check_prompts_file(args)  # its shape first, then how many it holds
    stack_prompts = settings.precision_check.prompt_list()
    try:
        if options.prompts or stack_prompts is None:
            stack_prompts = checker.load_prompts(options.prompts, options.mode)
    except checker.CheckError as exc:
        raise UsageError(str(exc)) from None
    check_minimums(options, len(stack_prompts), set(vars(args)))
    for field in REPORT_FIELDS:  # before any prompt is sent, not after the whole check
        if getattr(options, field, None):
            check_output_file(Path(getattr(options, field)), flag(field))
    file = stack_path(root, args.stack).name
    result.update(ascendImage=image, previousVerifiedImage=settings.verified_ascend_image)
    try:
        code, report = run_check(args, base, settings.precision_check.prompt_list())
        result["check"] = report
        compared = report.get("prompts") if isinstance(report, dict) else None
        if code == checker.EXIT_PASS and not (
            isinstance(compared, int) and compared >= MIN_PROMPTS
        ):
            print(
                f"error: not recorded: the check's report counts {compared} prompts (at least "
                f"{MIN_PROMPTS}); {KEY} unchanged",
                file=sys.stderr,
            )
            return checker.EXIT_ERROR
        if code != checker.EXIT_PASS:
            why = (
                "the check did not pass"
                if code == checker.EXIT_MISMATCH
                else "the check could not complete or its report could not be written"
            )
            print(f"{KEY} unchanged in {file}: {why}", file=sys.stderr)
            return code
        # The check took a while: record only if the stack still serves the image it checked.
        hold.enter_context(repo_lock(root, f"dualstack verify-precision -s {args.stack}"))
        current = load_settings(load_stack_config(root, args.stack), service=args.service)
        if current.ascend.image != image:
            raise StackFileError(
                f"{file} changed during the check: ascend image is now {current.ascend.image}, "
                f"checked {image}; {KEY} unchanged"
            )
        if current.nvidia.image != settings.nvidia.image:
            raise StackFileError(
                f"{file} changed during the check: nvidia image is now {current.nvidia.image}, "
                f"checked against {settings.nvidia.image}; {HISTORY_KEY} unchanged"
            )
        pair = {"nvidia": settings.nvidia.image, "ascend": image}
        history = [p.as_fact() for p in current.verified_images]
        known = pair in history
        history += [] if known else [pair]
        previous = current.verified_ascend_image or "unset"
        prefix = f"services.{current.member}." if current.member is not None else ""
        result.update(
            recorded=True,
            previousVerifiedImage=current.verified_ascend_image,
            verifiedImages=history,
        )
        print(
            f"recording {prefix}{KEY} = {image} in {file} (was {previous}); {HISTORY_KEY}: "
            f"{settings.nvidia.image} + {image} "
            f"{'already recorded' if known else f'added ({len(history)} pairs)'}"
        )
        sys.stdout.flush()  # every line delivered before the file changes
    except BrokenPipeError:
        checker.discard_stdout()
        print(f"error: output closed (broken pipe); {KEY} unchanged", file=sys.stderr)
        return checker.EXIT_ERROR
    return checker.EXIT_PASS
