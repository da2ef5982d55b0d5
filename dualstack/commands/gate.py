"""`dualstack gate`: may the stack take its next ladder step? PASS/FAIL/NO_DATA per criterion."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from components.settings import Settings, load_settings
from dualstack.commands.output_paths import check_output_file
from dualstack.errors import UsageError
from dualstack.gate.criteria import GateReport, evaluate, parse_duration, parse_time, parse_window
from dualstack.gate.data import DEFAULT_BOUNDS, DataBounds
from dualstack.gate.prometheus import PrometheusClient, check_url
from dualstack.gate.report import format_markdown, format_table
from dualstack.repo.project import find_root, load_stack_config

PROMETHEUS_ENV = "DUALSTACK_PROMETHEUS_URL"
"""Environment variable read when `--prometheus` is not given."""


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """The options `gate` and `promote` share: where and over what window to judge."""
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        default=os.environ.get(PROMETHEUS_ENV),
        help=f"Prometheus base URL, e.g. http://127.0.0.1:9090 (default: ${PROMETHEUS_ENV})",
    )
    parser.add_argument(
        "--window", default="30m", help="judge the last DURATION, 5m..7d (default: 30m)"
    )
    parser.add_argument(
        "--at",
        metavar="TIME",
        default=None,
        help="end of the window: unix seconds or RFC 3339 (default: now)",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds per query (default: 10)"
    )
    parser.add_argument(
        "--max-staleness",
        metavar="DURATION",
        default=f"{DEFAULT_BOUNDS.max_staleness_s // 60}m",
        help="a series whose newest sample is older than this at the window end is NO_DATA "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--min-coverage",
        metavar="PERCENT",
        type=float,
        default=DEFAULT_BOUNDS.min_coverage * 100,
        help="a series with samples in less of the window is NO_DATA (default: %(default)g)",
    )
    parser.add_argument(
        "--markdown", type=Path, metavar="FILE", help="also write the report as Markdown"
    )


def run_gate(args: argparse.Namespace, settings: Settings) -> GateReport:
    """Evaluate the gate for `args.stack` with the shared options; prints the table.

    Raises UsageError for a missing/bad URL, window, time, bound or --markdown path (before
    any query); PrometheusUnavailable / PrometheusError when Prometheus does not answer or
    answers with something that is not a query result.
    """
    if not args.prometheus:
        raise UsageError(f"no Prometheus: pass --prometheus URL or set ${PROMETHEUS_ENV}")
    if not 0 < args.timeout <= 300:
        raise UsageError(f"--timeout {args.timeout:g}: expected 0 < seconds <= 300")
    if not 0 < args.min_coverage <= 100:
        raise UsageError(f"--min-coverage {args.min_coverage:g}: expected 0 < percent <= 100")
    try:
        client = PrometheusClient(check_url(args.prometheus), timeout=args.timeout)
        window = parse_window(args.window)
        staleness = parse_duration(args.max_staleness, "--max-staleness")
        at = parse_time(args.at) if args.at is not None else time.time()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not 0 < staleness <= window:
        raise UsageError(
            f"--max-staleness {args.max_staleness}: expected more than 0 and at most the "
            f"window ({args.window})"
        )
    check_output_file(args.markdown, "--markdown")
    bounds = DataBounds(int(staleness), args.min_coverage / 100)
    report = evaluate(settings, args.stack, client, args.window, at, bounds)
    sys.stdout.write(format_table(report))
    if args.markdown is not None:
        args.markdown.write_text(format_markdown(report), encoding="utf-8")
    return report


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
