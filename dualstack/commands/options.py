"""Options and option-driven steps shared by verbs, so no command imports another.

- the gate's options (`gate`, `promote`), `gate_client` and `run_gate`, which judges from them;
- the PR options (`promote`, `rollback`): `--commit`, `--branch`, `--body-file`, with
  `commit_plan` (the checks made before anything changes) and `publish` (PR text, commit);
- `policy_refusal`: the error lines when a written step breaks mandatory policies.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from components.settings import Settings
from dualstack.commands.arg_types import number
from dualstack.commands.output_paths import check_output_file
from dualstack.errors import UsageError
from dualstack.gate.criteria import GateReport, parse_duration, parse_time, parse_window
from dualstack.gate.data import DEFAULT_BOUNDS, DataBounds
from dualstack.gate.prometheus import NO_AUTH, PrometheusClient, check_url
from dualstack.gate.promotion import evaluate_promotion
from dualstack.gate.report import format_markdown, format_table
from dualstack.gate.trend import fetch_trend
from dualstack.offline.policy_run import PolicyResult
from dualstack.repo.stackfile import stack_path
from dualstack.step.pr_text import commit_message
from dualstack.step.publish import CommitPlan, commit_on_new_branch, prepare_commit

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
        "--window", default="30m", help="judge the last DURATION, 5m..7d (default: 30m)"
    )
    parser.add_argument(
        "--at",
        metavar="TIME",
        default=None,
        help="end of the window: unix seconds or RFC 3339 (default: now)",
    )
    parser.add_argument(
        "--timeout", type=number, default=10.0, help="seconds per query (default: 10)"
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


@dataclass(frozen=True)
class GateRun:
    """One stack's gate: the report and its Markdown (with the charts), when asked for."""

    report: GateReport
    markdown: str | None = None


@dataclass(frozen=True)
class GateSetup:
    """What the shared options describe: the client, the window's end (unix s), the bounds."""

    client: PrometheusClient
    at: float
    bounds: DataBounds


def gate_setup(args: argparse.Namespace) -> GateSetup:
    """The Prometheus client and window the shared options describe, checked before any query.

    Raises UsageError for a missing/bad URL, http config file, timeout, window, time, bound
    or --markdown path.
    """
    if not args.prometheus:
        raise UsageError(f"no Prometheus: pass --prometheus URL or set ${PROMETHEUS_ENV}")
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
    return GateSetup(client, at, DataBounds(int(staleness), args.min_coverage / 100))


def run_gate(
    args: argparse.Namespace,
    settings: Settings,
    stack: str,
    setup: GateSetup | None = None,
    markdown: bool = False,
    step: tuple[int, int | None] | None = None,
) -> GateRun:
    """Evaluate the gate for `stack` with the shared options (`setup` from `gate_setup`,
    made here when None); prints the table, and progress on stderr when wanted. With
    `markdown` (or --markdown) also renders the Markdown with the window's charts. `step`
    (from, to) in %: the step to judge (promote's); default: from the recorded rung.

    Raises UsageError before any query for bad options (see `gate_setup`);
    PrometheusUnavailable / PrometheusError when Prometheus does not answer or answers with
    something that is not a query result.
    """
    from precision_check.progress import Progress, wanted

    setup = setup if setup is not None else gate_setup(args)
    progress = Progress(f"gate {stack}", "queries") if wanted(args.progress) else None
    try:
        report = evaluate_promotion(
            settings, stack, setup.client, args.window, setup.at, setup.bounds, step, progress
        )
    finally:
        if progress is not None:
            progress.close()
    sys.stdout.write(format_table(report))
    if not (markdown or args.markdown is not None):
        return GateRun(report)
    trend = fetch_trend(setup.client, settings, parse_window(args.window), setup.at)
    return GateRun(report, format_markdown(report, trend))


def add_pr_arguments(parser: argparse.ArgumentParser) -> None:
    """Options `promote` and `rollback` share: the git branch and commit, the body file."""
    parser.add_argument(
        "--commit",
        action="store_true",
        help="create a branch and commit the stack file on it (only that file)",
    )
    parser.add_argument("--branch", help="branch name for --commit (default: dualstack/...)")
    parser.add_argument(
        "--body-file", type=Path, metavar="FILE", help="write the PR body here (for gh pr create)"
    )


def publish(
    args: argparse.Namespace,
    root: Path,
    commit: tuple[CommitPlan, str, bytes] | None,
    title: str,
    body: str,
    notes: list[str],
) -> dict[str, str] | None:
    """Print the PR title and body, write --body-file, and with --commit (`commit`: the plan,
    the branch, the stack file's bytes to restore if the commit fails) commit the step.
    Returns `{"sha", "branch", "base"}` of the commit, or None without --commit."""
    print(f"--- PR title ---\n{title}\n--- PR body ---")
    sys.stdout.write(body)
    if args.body_file is not None:
        args.body_file.write_text(body, encoding="utf-8")
    if commit is None:
        return None
    plan, branch, original = commit
    path = stack_path(root, args.stack)
    sha = commit_on_new_branch(root, path, branch, commit_message(title, notes), original)
    where = "" if plan.in_place else " (in a temporary worktree; your checkout is untouched)"
    print(f"--- committed {sha} on branch {branch}, from {plan.base}{where}; push it and open")
    print(f"the PR:\ngit push -u origin {branch}")
    return {"sha": sha, "branch": branch, "base": plan.base}


def commit_plan(args: argparse.Namespace, root: Path) -> CommitPlan | None:
    """With --commit, the checks made before anything changes (see `prepare_commit`)."""
    if not args.commit:
        return None
    return prepare_commit(root, stack_path(root, args.stack), args.stack)


def policy_refusal(violations: list[PolicyResult], stack_file: str, stays: str) -> list[str]:
    """The error lines when a written step breaks mandatory policies (the file is restored)."""
    lines = [
        f"policy {v.policy}: {v.resource + ': ' if v.resource else ''}{v.message}"
        for v in violations
    ]
    return [*lines, f"{stack_file} restored; {stays}"]
