"""`dualstack gate`: may the stack take its next ladder step? PASS/FAIL/NO_DATA per criterion."""

from __future__ import annotations

import argparse
from pathlib import Path

from components.settings import Settings, load_fleet
from dualstack.cli import VERBS, examples
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
from dualstack.errors import EXIT_FAILED, EXIT_OK
from dualstack.gate.report import report_data
from dualstack.gate.run import run_gate
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
        ),
        description="Query the recorded per-hardware series over a window and judge Ascend "
        "against NVIDIA: enough requests, 5xx ratio within the margin, p99 within the factor "
        "(or under the absolute SLO), precision check passed for the served image. Each "
        "criterion is PASS, FAIL or NO_DATA; NO_DATA (no, stale or sparse data) never "
        "passes. Without -s, every stack is judged; a fleet stack's service is named with "
        "--service (its series carry the `service` label), without it every service of the "
        "fleet is judged on its own. Exit 0 when every required criterion of every stack "
        "(every judged service) passes, 1 otherwise, 2 when Prometheus is unreachable or "
        "answers with something that is not a query result.",
    )
    add_stack_argument(parser, many=True)
    add_service_argument(parser)
    add_gate_arguments(parser)
    add_output_argument(parser)
    add_json_file_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    stacks = every_stack(root, args.stack)
    judged = [(stack, member) for stack in stacks for member in _judged(root, stack, args.service)]
    setup = gate_setup(args)
    check_output_file(args.json_file, "--json-file")
    runs = []
    with human_text_to_stderr(args):
        for index, (stack, member) in enumerate(judged):
            if index:
                print()
            runs.append(run_gate(member, stack, setup))
    passed = all(run.report.passed for run in runs)
    if args.markdown is not None:
        text = "\n".join(run.markdown or "" for run in runs)
        write_file(args.markdown, text)
    doc = document("gate", passed=passed, stacks=[report_data(r.report) for r in runs])
    write_json_file(args, doc)
    if wants_json(args):
        emit(doc)
    return EXIT_OK if passed else EXIT_FAILED


def _judged(root: Path, stack: str, service: str | None) -> list[Settings]:
    """The services of `stack` the gate judges: `service` (raises SettingsError listing the
    services when it has no such one), else every service, a single-service stack's one."""
    fleet = load_fleet(load_stack_config(root, stack))
    return [fleet.member(service)] if service is not None else list(fleet)
