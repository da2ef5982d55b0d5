"""The gate's options, shared by `gate` and `promote` (and `status`'s `PROMETHEUS_ENV`):
where and over what window to judge, checked into a `GateSetup` before any query."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from dualstack.commands.arg_types import duration, moment, number, seconds
from dualstack.commands.output_paths import check_output_file
from dualstack.errors import UsageError
from dualstack.gate.data import DEFAULT_BOUNDS, DataBounds
from dualstack.gate.durations import parse_duration, parse_time, parse_window
from dualstack.gate.prometheus import NO_AUTH, PrometheusClient, check_url
from dualstack.gate.run import GateSetup

PROMETHEUS_ENV = "DUALSTACK_PROMETHEUS_URL"
"""Environment variable read when `--prometheus` is not given."""
HTTP_CONFIG_ENV = "DUALSTACK_PROMETHEUS_HTTP_CONFIG"
"""Environment variable read when `--prometheus-http-config` is not given."""


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """The options `gate` and `promote` share: where and over what window to judge."""
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        default=os.environ.get(PROMETHEUS_ENV),
        help=f"Prometheus base URL, e.g. http://127.0.0.1:9090 (default: ${PROMETHEUS_ENV})",
    )
    parser.add_argument(
        "--prometheus-http-config",
        metavar="FILE",
        type=Path,
        default=os.environ.get(HTTP_CONFIG_ENV) or None,
        help="Prometheus's http_config YAML, as promtool's --http.config.file takes it: "
        "basic_auth, authorization / bearer_token_file, tls_config, http_headers "
        f"(default: ${HTTP_CONFIG_ENV})",
    )
    parser.add_argument(
        "--window",
        type=duration,
        default="30m",
        help="judge the last DURATION, 5m..7d (default: 30m)",
    )
    parser.add_argument(
        "--at",
        metavar="TIME",
        type=moment,
        default=None,
        help="end of the window: unix seconds or RFC 3339 (default: now)",
    )
    parser.add_argument(
        "--timeout", type=seconds, default=10.0, help="seconds per query (default: 10)"
    )
    parser.add_argument(
        "--max-staleness",
        metavar="DURATION",
        type=duration,
        default=f"{DEFAULT_BOUNDS.max_staleness_s // 60}m",
        help="a series whose newest sample is older than this at the window end is NO_DATA "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--min-coverage",
        metavar="PERCENT",
        type=number,
        default=DEFAULT_BOUNDS.min_coverage * 100,
        help="a series with samples in less of the window is NO_DATA (default: %(default)g)",
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        metavar="FILE",
        help="also write the report as Markdown, with charts of both backends over the window",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the queries' progress on stderr (default: only when stderr is a terminal)",
    )


SKIP_GATE_HINT = (
    'or promote without the gate: --skip-gate --reason "why" (the reason goes into the PR '
    "for the reviewers)"
)
"""How `promote` may go on without a Prometheus: the way out its refusal names."""


def gate_setup(args: argparse.Namespace, way_out: str | None = None) -> GateSetup:
    """The Prometheus client and window the shared options describe, checked before any query.
    `way_out`: what else the command can do without a Prometheus (`SKIP_GATE_HINT`), named
    in that refusal.

    Raises UsageError for a missing/bad URL, http config file, timeout, window, time, bound
    or --markdown path.
    """
    if not args.prometheus:
        other = f"; {way_out}" if way_out else ""
        raise UsageError(f"no Prometheus: pass --prometheus URL or set ${PROMETHEUS_ENV}{other}")
    if not 0 < args.timeout <= 300:
        raise UsageError(f"--timeout {args.timeout:g}: expected 0 < seconds <= 300")
    if not 0 < args.min_coverage <= 100:
        raise UsageError(f"--min-coverage {args.min_coverage:g}: expected 0 < percent <= 100")
    auth = NO_AUTH
    if args.prometheus_http_config is not None:
        from dualstack.gate.http_config import load_http_config  # pydantic models: only if used

        auth = load_http_config(args.prometheus_http_config)
    try:
        client = PrometheusClient(check_url(args.prometheus), timeout=args.timeout, auth=auth)
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
    return GateSetup(client, at, bounds, args.window, args.progress, args.markdown is not None)
