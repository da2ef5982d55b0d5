"""The gate's two renderings: a terminal table and a Markdown section for a PR description."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dualstack.gate.criteria import Criterion, GateReport
from dualstack.gate.trend import Trend, trend_markdown

COLUMNS = ("Criterion", "Result", "Ascend", "NVIDIA", "Threshold")


def timestamp(at: float) -> str:
    """Unix seconds as RFC 3339 UTC: `2023-11-14T22:13:20Z`."""
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def verdict(report: GateReport) -> str:
    """`PASSED` or `FAILED`."""
    return "PASSED" if report.passed else "FAILED"


def _result(criterion: Criterion) -> str:
    return criterion.status if criterion.required else f"{criterion.status} (not required)"


def _row(criterion: Criterion) -> tuple[str, ...]:
    return (
        criterion.title,
        _result(criterion),
        criterion.ascend,
        criterion.nvidia or "-",
        criterion.threshold,
    )


def weight_text(report: GateReport) -> str:
    """The weight the data was taken at: `Ascend at 20%` when the recorded route weight and
    the stack file agree, `data taken at 5% Ascend; the stack file says 20%` when they do
    not, `Ascend at 20% per the stack file (no recorded route weight)` without a record."""
    recorded = report.recorded_weight
    if recorded is None:
        return f"Ascend at {report.weight}% per the stack file (no recorded route weight)"
    low, high = recorded
    if low == high == report.weight:
        return f"Ascend at {report.weight}%"
    taken = f"{low}%" if low == high else f"{low}-{high}% (it changed in the window)"
    return f"data taken at {taken} Ascend; the stack file says {report.weight}%"


def _scope(report: GateReport) -> str:
    return f"window {report.window} ending {timestamp(report.at)}, Prometheus {report.prometheus}"


def _not_required_note(report: GateReport) -> str | None:
    if all(c.required for c in report.criteria):
        return None
    return (
        "Ascend serves 0% of traffic, so there is nothing to compare yet: the "
        "traffic criteria are shown but not required, and this step rests on the split, the "
        "bake time and precision."
    )


def format_table(report: GateReport) -> str:
    """The terminal report: a header, an aligned table, then one line of detail per criterion."""
    rows = [COLUMNS, *(_row(c) for c in report.criteria)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [
        f"Promotion gate for {report.where} (namespace {report.namespace}, "
        f"{weight_text(report)}): {verdict(report)}",
        "W" + _scope(report)[1:],
        "",
    ]
    for row in rows:
        lines.append(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    lines.append("")
    lines += [f"{c.title}: {c.status}: {c.detail}" for c in report.criteria]
    note = _not_required_note(report)
    if note:
        lines.append(f"Note: {note}")
    lines += [f"Note: {extra}" for extra in report.notes]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or " "


def format_markdown(report: GateReport, trend: Trend | None = None) -> str:
    """A `### Promotion gate` section: verdict, scope, a table with each criterion's detail,
    then, with `trend`, the Mermaid charts of both backends over the window."""
    lines = [
        f"### Promotion gate: {verdict(report)}",
        "",
        f"Stack `{report.stack}`"
        + (f", service `{report.service}`" if report.service is not None else "")
        + f" (namespace `{report.namespace}`, {weight_text(report)}), "
        f"{_scope(report)}.",
        "",
        "| " + " | ".join((*COLUMNS, "Detail")) + " |",
        "|" + "---|" * (len(COLUMNS) + 1),
    ]
    for criterion in report.criteria:
        cells = (*_row(criterion), criterion.detail)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    note = _not_required_note(report)
    if note:
        lines += ["", f"_{note}_"]
    lines += [line for extra in report.notes for line in ("", f"_{extra}_")]
    text = "\n".join(lines) + "\n"
    return text if trend is None else f"{text}\n{trend_markdown(trend)}"


def criterion_data(criterion: Criterion) -> dict[str, Any]:
    """One criterion as plain data (an element of `criteria` in `dualstack/gate/v1`)."""
    return {
        "key": criterion.key,
        "title": criterion.title,
        "status": criterion.status,
        "required": criterion.required,
        "ascend": criterion.ascend,
        "nvidia": criterion.nvidia or None,
        "ascendValue": criterion.ascend_value,
        "nvidiaValue": criterion.nvidia_value,
        "threshold": criterion.threshold,
        "detail": criterion.detail,
    }


def report_data(report: GateReport) -> dict[str, Any]:
    """One stack's gate run as plain data (an element of `stacks` in `dualstack/gate/v1`).

    `at` is unix seconds and `atTime` the same moment in RFC 3339; `recordedWeight` is the
    route weight (%) the deployed rules recorded over the window, or null; `prometheus` is
    the base URL without credentials.
    """
    recorded = report.recorded_weight
    return {
        "stack": report.stack,
        "service": report.service,
        "namespace": report.namespace,
        "passed": report.passed,
        "verdict": verdict(report),
        "weight": report.weight,
        "recordedWeight": None if recorded is None else {"low": recorded[0], "high": recorded[1]},
        "window": report.window,
        "at": report.at,
        "atTime": timestamp(report.at),
        "prometheus": report.prometheus,
        "bounds": {
            "maxStalenessSeconds": report.bounds.max_staleness_s,
            "minCoverage": report.bounds.min_coverage,
        },
        "criteria": [criterion_data(c) for c in report.criteria],
        "step": None if report.step is None else {"from": report.step[0], "to": report.step[1]},
        "notes": list(report.notes),
    }
