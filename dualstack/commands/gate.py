"""`dualstack gate`: may the stack take its next ladder step? PASS/FAIL/NO_DATA per criterion."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

from components.settings import Settings, load_fleet
from dualstack.cli import VERBS, examples
from dualstack.commands.arg_types import duration, seconds
from dualstack.commands.gate_options import add_gate_arguments, gate_setup
from dualstack.commands.machine import (
    add_json_file_argument,
    add_output_argument,
    document,
    emit,
    human_text_to_stderr,
    wants_json,
    write_json_file,
)
from dualstack.commands.output_paths import check_output_file
from dualstack.commands.stacks import add_service_argument, add_stack_argument, every_stack
from dualstack.errors import EXIT_FAILED, EXIT_OK, UsageError
from dualstack.gate.durations import parse_duration
from dualstack.gate.report import report_data
from dualstack.gate.run import GateRun, run_gate
from dualstack.gate.wait import EXIT_TIMED_OUT, MAX_WAIT_SECONDS, wait_for_gate
from dualstack.repo.atomic import write_file
from dualstack.repo.stack_config import find_root, load_stack_config


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "gate",
        help=VERBS["gate"],
        epilog=examples(
            "dualstack gate --stack prod --prometheus http://127.0.0.1:9090",
            "dualstack gate --stack prod --prometheus http://127.0.0.1:9090 --window 1h \\\n"
            "--markdown gate.md  # the report, with its charts, for the PR",
            "dualstack gate --stack fleet --service chat -o json  # with $DUALSTACK_PROMETHEUS_URL",
            "dualstack gate --stack prod --wait 2h  # until it passes (0), fails (1), 2h pass (3)",
        ),
        description="Query the recorded per-hardware series over a window and judge Ascend "
        "against NVIDIA: enough requests, 5xx ratio within the margin, p99 within the factor "
        "(or under the absolute SLO), precision check passed for the served image. Each "
        "criterion is PASS, FAIL or NO_DATA; NO_DATA (no, stale or sparse data) never "
        "passes. Without -s, every stack is judged; a fleet stack's service is named with "
        "--service (its series carry the `service` label), without it every service of the "
        "fleet is judged on its own. Exit 0 when every required criterion of every stack "
        "(every judged service) passes, 1 otherwise, 2 when Prometheus is unreachable or "
        "answers with something that is not a query result; with --wait, 3 when the time "
        "ran out with the gate still pending.",
    )
    add_stack_argument(parser, many=True)
    add_service_argument(parser)
    add_gate_arguments(parser)
    _add_wait_arguments(parser)
    add_output_argument(parser)
    add_json_file_argument(parser)
    parser.set_defaults(func=run)


def _add_wait_arguments(parser: argparse.ArgumentParser) -> None:
    """`--wait DURATION` and `--interval SECONDS` (`dualstack.gate.wait`)."""
    parser.add_argument(
        "--wait",
        metavar="DURATION",
        type=duration,
        default=None,
        help="judge again, over the window ending each time, until the gate passes (exit 0), "
        "a criterion fails that waiting cannot mend (exit 1) or DURATION is up with the "
        "gate still pending (exit 3); at most 7d, not with --at",
    )
    parser.add_argument(
        "--interval",
        metavar="SECONDS",
        type=seconds,
        default=60.0,
        help="with --wait: seconds between two evaluations (default: 60)",
    )


def _evaluate(args: argparse.Namespace, judged: list[tuple[str, Settings]]) -> list[GateRun]:
    """One evaluation of every judged service, its tables printed."""
    setup = gate_setup(args)
    runs = []
    for index, (stack, member) in enumerate(judged):
        if index:
            print()
        runs.append(run_gate(member, stack, setup))
    return runs


def _wait_seconds(args: argparse.Namespace) -> float:
    """--wait in seconds; UsageError when it is out of bounds or goes with --at."""
    wait = parse_duration(args.wait, "--wait")
    if not 0 < wait <= MAX_WAIT_SECONDS:
        raise UsageError(f"--wait {args.wait}: expected more than 0 and at most 7d")
    if args.at is not None:
        raise UsageError(
            "--wait judges the window ending at each evaluation: leave out --at (a fixed "
            "window gives the same verdict every time)"
        )
    return wait


def _waited(args: argparse.Namespace, judged: list[tuple[str, Settings]]) -> tuple:
    """(the last evaluation's runs, how the wait ended): evaluations until `wait_for_gate`
    ends; only the last one's tables are printed, each pending one is a line on stderr."""

    def evaluate() -> tuple[tuple[list[GateRun], str], list]:
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown):
            runs = _evaluate(args, judged)
        return (runs, shown.getvalue()), [run.report for run in runs]

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    waited = wait_for_gate(
        evaluate, _wait_seconds(args), args.interval, time.monotonic, time.sleep, say
    )
    runs, text = waited.last
    sys.stdout.write(text)
    return runs, waited


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    stacks = every_stack(root, args.stack)
    judged = [(stack, member) for stack in stacks for member in _judged(root, stack, args.service)]
    gate_setup(args)  # every option checked before any query
    if args.wait is not None:
        _wait_seconds(args)
    check_output_file(args.json_file, "--json-file")
    waited = None
    with human_text_to_stderr(args):
        if args.wait is None:
            runs = _evaluate(args, judged)
        else:
            runs, waited = _waited(args, judged)
    passed = all(run.report.passed for run in runs)
    if args.markdown is not None:
        text = "\n".join(run.markdown or "" for run in runs)
        write_file(args.markdown, text)
    stacks_data = [report_data(r.report) for r in runs]
    extra = {} if waited is None else {"wait": waited.data}
    doc = document("gate", passed=passed, stacks=stacks_data, **extra)
    write_json_file(args, doc)
    if wants_json(args):
        emit(doc)
    if waited is not None and waited.outcome == "timed-out":
        print(
            f"gate: still pending after --wait {args.wait} ({waited.evaluations} evaluations): "
            "not passed",
            file=sys.stderr,
        )
        return EXIT_TIMED_OUT
    return EXIT_OK if passed else EXIT_FAILED


def _judged(root: Path, stack: str, service: str | None) -> list[Settings]:
    """The services of `stack` the gate judges: `service` (raises SettingsError listing the
    services when it has no such one), else every service, a single-service stack's one."""
    fleet = load_fleet(load_stack_config(root, stack))
    return [fleet.member(service)] if service is not None else list(fleet)
