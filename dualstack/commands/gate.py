"""`dualstack gate`: may the stack take its next ladder step? PASS/FAIL/NO_DATA per criterion."""

from __future__ import annotations

import argparse
from pathlib import Path

from components.settings import load_settings
from dualstack.commands.options import add_gate_arguments, run_gate
from dualstack.repo.stack_config import find_root, load_stack_config


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "gate",
        help="judge the next ladder step on Prometheus data (exit 0 only on PASS)",
        description="Query the recorded per-hardware series over a window and judge Ascend "
        "against NVIDIA: enough requests, 5xx ratio within the margin, p99 within the factor "
        "(or under the absolute SLO), precision check passed for the served image. Each "
        "criterion is PASS, FAIL or NO_DATA; NO_DATA (no, stale or sparse data) never "
        "passes. Exit 0 when every required criterion passes, 1 otherwise, 2 when "
        "Prometheus is unreachable or answers with something that is not a query result.",
    )
    parser.add_argument("--stack", default="prod", help="stack name (default: prod)")
    add_gate_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    settings = load_settings(load_stack_config(root, args.stack))
    return 0 if run_gate(args, settings).passed else 1
