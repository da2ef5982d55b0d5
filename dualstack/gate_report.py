"""The gate's two renderings: a terminal table and a Markdown section for a PR description."""

from __future__ import annotations

from datetime import UTC, datetime

from dualstack.gate import Criterion, GateReport

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


def _scope(report: GateReport) -> str:
    return f"window {report.window} ending {timestamp(report.at)}, Prometheus {report.prometheus}"


def _not_required_note(report: GateReport) -> str | None:
    if all(c.required for c in report.criteria):
        return None
    return (
        f"Ascend serves {report.weight}% of traffic, so there is nothing to compare yet: the "
        "traffic criteria are shown but not required, and this step rests on precision."
    )


def format_table(report: GateReport) -> str:
    """The terminal report: a header, an aligned table, then one line of detail per criterion."""
    rows = [COLUMNS, *(_row(c) for c in report.criteria)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [
        f"Promotion gate for stack {report.stack} (namespace {report.namespace}, Ascend at "
        f"{report.weight}%): {verdict(report)}",
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
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or " "


def format_markdown(report: GateReport) -> str:
    """A `### Promotion gate` section: verdict, scope, a table with each criterion's detail."""
    lines = [
        f"### Promotion gate: {verdict(report)}",
        "",
        f"Stack `{report.stack}` (namespace `{report.namespace}`, Ascend at {report.weight}%), "
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
    return "\n".join(lines) + "\n"
