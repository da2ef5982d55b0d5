"""The Markdown report (`--markdown FILE`), for a pull request or a pipeline summary: the
verdict and mode, the numbers, the reasons, the first diverging examples, the errors."""

from __future__ import annotations

from .options import HARDWARE
from .output import EXAMPLES, SHOWN, headline
from .report import Report


def cell(value: object) -> str:
    """`value` as text for one table cell or list item: `|` escaped, newlines as spaces
    (answers are shown quoted with `repr`, so their whitespace stays visible)."""
    return str(value).replace("|", r"\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]


def _numbers(report: Report) -> list[str]:
    options, lines = report.options, []
    if report.accuracy is None:
        lines.append(
            f"- **Cross-hardware agreement**: {report.matched}/{report.pairs} answer pairs "
            f"({report.match_rate:.1f} %, need {options.min_match_rate:g} %)"
        )
    if options.mode == "topk":
        lines.append(
            f"- **Diverged within the top-{options.top_k}** (tolerated): "
            f"{len(report.divergences)} pairs"
        )
    if report.baseline is not None:
        base = report.baseline
        lines.append(
            f"- **Same-hardware baseline** (each prompt twice): NVIDIA {base.rate('nvidia'):.1f} "
            f"%, Ascend {base.rate('ascend'):.1f} %, cross {report.match_rate:.1f} % (margin "
            f"{base.margin:g} points)"
        )
    if report.accuracy is not None and report.compared:
        acc = report.accuracy
        for hw in HARDWARE:
            low, high = acc.interval(hw)
            lines.append(
                f"- **{hw} accuracy**: {acc.correct(hw)}/{acc.items} ({acc.rate(hw):.1f} %, "
                f"Wilson 95 % {low:.1f}–{high:.1f} %)"
            )
        low, high = acc.difference_interval
        lines.append(
            f"- **Ascend − NVIDIA**: {acc.difference:+.1f} points (95 % {low:+.1f} to "
            f"{high:+.1f}; tolerance {acc.tolerance:g})"
        )
    return lines


def format_markdown(report: Report) -> str:
    """The whole Markdown report."""
    options = report.options
    lines = [f"## Precision check: {report.status.upper()} ({options.mode} mode)", ""]
    lines += [headline(report).removeprefix("precision check "), ""]
    backends = [
        [hw, getattr(options, hw), getattr(options, f"{hw}_image") or "-",
         report.answered.get(hw, 0), report.retries.get(hw, 0)]
        for hw in HARDWARE
    ]  # fmt: skip
    lines += _table(["backend", "URL", "image", "answers", "retries"], backends)
    lines += ["", *_numbers(report)]
    lines.append(f"- **Duration**: {report.duration:.2f} s")
    if report.reasons:
        lines += ["", "### Why it did not pass", ""] + [f"- {r}" for r in report.reasons]
    if report.mismatches:
        rows = [
            [m.prompt_id, f"{m.unit} {m.position}", m.detail, repr(m.nvidia), repr(m.ascend)]
            for m in report.mismatches[:SHOWN]
        ]
        lines += ["", f"### First mismatches ({len(report.mismatches)} in all)", ""]
        lines += _table(["prompt", "at", "why", "NVIDIA", "Ascend"], rows)
    if report.divergences:
        rows = [[m.prompt_id, m.detail] for m in report.divergences[:EXAMPLES]]
        lines += ["", f"### First tolerated divergences ({len(report.divergences)} in all)", ""]
        lines += _table(["prompt", "where"], rows)
    if report.baseline is not None and report.baseline.repeats:
        repeats = report.baseline.repeats
        rows = [[r.hardware, r.prompt_id, r.detail, repr(r.first), repr(r.second)] for r in repeats]
        lines += ["", f"### First answers that changed on repeat ({len(repeats)} in all)", ""]
        lines += _table(["backend", "prompt", "why", "run 1", "run 2"], rows[:EXAMPLES])
    if report.errors:
        lines += ["", "### Errors", ""] + [f"- {cell(e)}" for e in report.errors[:SHOWN]]
    return "\n".join(lines) + "\n"
