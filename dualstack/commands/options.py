"""Options and option-driven steps shared by verbs, so no command imports another.

- the gate's options (`gate`, `promote`) and `run_gate`, which judges from them;
- the PR options (`promote`, `rollback`): `--commit`, `--branch`, `--body-file`, with
  `commit_plan` (the checks made before anything changes) and `publish` (PR text, commit);
- `policy_refusal`: the error lines when a written step breaks mandatory policies.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from components.settings import Settings
from dualstack.commands.arg_types import number
from dualstack.commands.output_paths import check_output_file
from dualstack.errors import UsageError
from dualstack.gate.criteria import GateReport, parse_duration, parse_time, parse_window
from dualstack.gate.data import DEFAULT_BOUNDS, DataBounds
from dualstack.gate.prometheus import PrometheusClient, check_url
from dualstack.gate.promotion import evaluate_promotion
from dualstack.gate.report import format_markdown, format_table
from dualstack.offline.policy_run import PolicyResult
from dualstack.repo.stackfile import stack_path
from dualstack.step.pr_text import commit_message
from dualstack.step.publish import CommitPlan, commit_on_new_branch, prepare_commit

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
        "--markdown", type=Path, metavar="FILE", help="also write the report as Markdown"
    )


def run_gate(
    args: argparse.Namespace, settings: Settings, step: tuple[int, int | None] | None = None
) -> GateReport:
    """Evaluate the gate for `args.stack` with the shared options; prints the table. `step`
    (from, to) in %: the step to judge (promote's); default: from the recorded rung.

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
    report = evaluate_promotion(settings, args.stack, client, args.window, at, bounds, step)
    sys.stdout.write(format_table(report))
    if args.markdown is not None:
        args.markdown.write_text(format_markdown(report), encoding="utf-8")
    return report


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
) -> None:
    """Print the PR title and body, write --body-file, and with --commit (`commit`: the plan,
    the branch, the stack file's bytes to restore if the commit fails) commit the step."""
    print(f"--- PR title ---\n{title}\n--- PR body ---")
    sys.stdout.write(body)
    if args.body_file is not None:
        args.body_file.write_text(body, encoding="utf-8")
    if commit is None:
        return
    plan, branch, original = commit
    path = stack_path(root, args.stack)
    if plan.carried_image is not None:
        notes = [*notes, f"Also records verifiedAscendImage {plan.carried_image}."]
        print(f"--- the uncommitted verifiedAscendImage {plan.carried_image} is committed too")
    sha = commit_on_new_branch(root, path, branch, commit_message(title, notes), original)
    where = "" if plan.in_place else " (in a temporary worktree; your checkout is untouched)"
    print(f"--- committed {sha} on branch {branch}, from {plan.base}{where}; push it and open")
    print(f"the PR:\ngit push -u origin {branch}")


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
