"""One stack's gate as the CLI runs it: evaluate every criterion, print the table, and render
the Markdown with the window's charts when asked (`dualstack gate`, `dualstack promote`).

`GateSetup` is what the shared gate options describe (built and checked before any query by
`dualstack.commands.gate_options.gate_setup`); `run_gate` judges one service with it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace

from components.settings import Settings
from dualstack.gate.criteria import GateReport
from dualstack.gate.data import DataBounds
from dualstack.gate.durations import parse_window
from dualstack.gate.hints import with_selectors
from dualstack.gate.prometheus import PrometheusClient
from dualstack.gate.promotion import evaluate_promotion
from dualstack.gate.report import format_markdown, format_table
from dualstack.gate.trend import fetch_trend
from dualstack.gate.webhooks import webhook_criteria


@dataclass(frozen=True)
class GateRun:
    """One stack's gate: the report and its Markdown (with the charts), when asked for."""

    report: GateReport
    markdown: str | None = None


@dataclass(frozen=True)
class GateSetup:
    """What the shared options describe: the client, the window (`--window` text, already
    checked) and its end (unix s), the data bounds, whether to show progress (None: only when
    stderr is a terminal) and whether the Markdown is wanted (`--markdown`)."""

    client: PrometheusClient
    at: float
    bounds: DataBounds
    window: str = "30m"
    progress: bool | None = None
    markdown: bool = False


def run_gate(
    settings: Settings,
    stack: str,
    setup: GateSetup,
    markdown: bool = False,
    step: tuple[int, int | None] | None = None,
) -> GateRun:
    """Evaluate the gate for `stack` with `setup`; prints the table, and progress on stderr
    when wanted. A NO_DATA criterion without series names the series it asked
    (`dualstack.gate.hints`); each of `gate.webhooks` is called and is a criterion
    (`dualstack.gate.webhooks`). With `markdown` (or `setup.markdown`) also renders the Markdown
    with the window's charts. `step` (from, to) in %: the step to judge (promote's); default:
    from the recorded rung.

    Raises PrometheusUnavailable / PrometheusError when Prometheus does not answer or answers
    with something that is not a query result.
    """
    from precision_check.progress import Progress, wanted

    progress = Progress(f"gate {stack}", "queries") if wanted(setup.progress) else None
    try:
        report = evaluate_promotion(
            settings, stack, setup.client, setup.window, setup.at, setup.bounds, step, progress
        )
    finally:
        if progress is not None:
            progress.close()
    criteria = [with_selectors(c, settings) for c in report.criteria]
    criteria += webhook_criteria(settings, stack, report.step)
    report = replace(report, criteria=criteria)
    sys.stdout.write(format_table(report))
    if not (markdown or setup.markdown):
        return GateRun(report)
    trend = fetch_trend(setup.client, settings, parse_window(setup.window), setup.at)
    return GateRun(report, format_markdown(report, trend))
