"""The pull-request report: each changed stack's preview, policy results and gate, one comment.

The pipelines run each check per stack and record it under `<dir>/<stack>/`:
`<part>.txt` (output shown as a code block) or `<part>.md` (Markdown shown as is), `<part>.rc`
(the exit code) or `<part>.skipped` (why it did not run). `read_results` collects them,
`verdict` decides the check, `render` writes the comment. A part that should have run and
left no exit code is an error, never a pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

MARKER = "<!-- dualstack-pr-report -->"
"""First line of every report: the pipelines update the comment carrying it in place."""

COMMENT_LIMIT = 60_000
"""Characters per report; GitHub refuses comments over 65,536 (GitLab notes: 1,000,000)."""

PART_LIMIT = 15_000
"""Characters of one check's output kept in the report (head and tail)."""

Status = Literal["pass", "failed", "error", "skipped", "not-run"]


@dataclass(frozen=True)
class Part:
    """One check the pipeline runs per stack. `blocking`: its failure fails the check.
    `required`: it always runs, so a missing exit code is an error."""

    name: str
    title: str
    blocking: bool = True
    required: bool = False


PARTS = (
    Part("offline-preview", "Offline preview and policies (`dualstack preview`)", required=True),
    Part("policy-config", "Policy-pack config from the deployed weight"),
    Part("pulumi-preview", "Online preview with the policy pack (`pulumi preview`)"),
    Part("gate", "Data gate (`dualstack gate`, advisory)", blocking=False),
)


@dataclass(frozen=True)
class PartResult:
    """What one check of one stack left: status, exit code, output, skip reason."""

    part: Part
    status: Status
    exit_code: int | None = None
    body: str = ""
    markdown: bool = False
    note: str = ""


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def read_part(stack_dir: Path, part: Part) -> PartResult:
    """The recorded result of `part` in `stack_dir`.

    Exit code 0 is a pass, 2 an error (dualstack: could not do the work), any other non-zero
    a failure. An unreadable exit-code file is an error; no exit code and no `.skipped`
    file is an error for a required part and `not-run` otherwise.
    """
    markdown = _read(stack_dir / f"{part.name}.md")
    body = markdown if markdown is not None else (_read(stack_dir / f"{part.name}.txt") or "")
    is_md = markdown is not None
    skipped = _read(stack_dir / f"{part.name}.skipped")
    if skipped is not None:
        return PartResult(part, "skipped", None, body, is_md, skipped.strip() or "skipped")
    raw = _read(stack_dir / f"{part.name}.rc")
    if raw is None:
        if part.required:
            return PartResult(part, "error", None, body, is_md, "no exit code was recorded")
        return PartResult(part, "not-run", None, body, is_md)
    try:
        code = int(raw.strip())
    except ValueError:
        return PartResult(part, "error", None, body, is_md, f"unreadable exit code {raw!r}")
    status: Status = "pass" if code == 0 else "error" if code == 2 else "failed"
    return PartResult(part, status, code, body, is_md)


def read_results(root: Path, stacks: Sequence[str]) -> dict[str, list[PartResult]]:
    """{stack: [one PartResult per PARTS entry]} read from `root/<stack>/`."""
    return {stack: [read_part(root / stack, part) for part in PARTS] for stack in stacks}


def verdict(results: Mapping[str, Sequence[PartResult]]) -> int:
    """The check's exit code: 2 when a blocking part errored, else 1 when one failed, else 0.

    Advisory parts (the gate) never change it; skipped parts (no credentials) pass.
    """
    worst = 0
    for stack_results in results.values():
        for result in stack_results:
            if not result.part.blocking:
                continue
            if result.status == "error":
                worst = 2
            elif result.status == "failed":
                worst = max(worst, 1)
    return worst


def cell(result: PartResult) -> str:
    """The summary-table text of one result: `✅ pass`, `❌ failed (exit 1)`, ..."""
    code = f" (exit {result.exit_code})" if result.exit_code is not None else ""
    if result.status == "pass":
        return "✅ pass"
    if result.status == "skipped":
        return "⏭️ skipped"
    if result.status == "not-run":
        return "—"
    if result.status == "failed" and not result.part.blocking:
        return f"⚠️ failed{code}, advisory"
    if result.status == "failed":
        return f"❌ failed{code}"
    return f"⛔ error{code}"


def fence(text: str) -> str:
    """`text` in a code block whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}text\n{text.rstrip()}\n{ticks}"


def clip(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters: the first two thirds and the last third
    (a preview summarises at the top, `pulumi preview` lists violations at the bottom)."""
    if len(text) <= limit:
        return text
    head, tail = (limit * 2) // 3, limit // 3
    cut = len(text) - head - tail
    return f"{text[:head]}\n… {cut} characters cut; the job log has all of it …\n{text[-tail:]}"


HEADLINES = {
    0: "✅ passed",
    1: "❌ failed: a mandatory policy violation or a failed check",
    2: "⛔ could not complete: an error is never a pass",
}


def _details(result: PartResult, limit: int) -> str:
    opened = " open" if result.status in ("failed", "error") else ""
    lines = [f"<details{opened}><summary>{result.part.title}: {cell(result)}</summary>", ""]
    if result.note:
        lines += [f"_{result.note}_", ""]
    if result.body.strip():
        body = clip(result.body, limit)
        lines += [body.rstrip() if result.markdown else fence(body), ""]
    lines.append("</details>")
    return "\n".join(lines)


def render(
    results: Mapping[str, Sequence[PartResult]],
    heading: str = "dualstack pull-request check",
    limit: int = COMMENT_LIMIT,
) -> str:
    """The Markdown report: marker, verdict headline, a stack × check table, then each
    check's output in a folded section (open when it failed). At most about `limit`
    characters: outputs are clipped evenly to fit."""
    code = verdict(results)
    lines = [MARKER, f"### {heading}: {HEADLINES[code]}", ""]
    if not results:
        lines.append("No stack changed: nothing to preview. The unit tests still ran.")
        return "\n".join(lines) + "\n"
    lines.append("| stack | " + " | ".join(part.name for part in PARTS) + " |")
    lines.append("|---" * (len(PARTS) + 1) + "|")
    for stack, stack_results in results.items():
        lines.append(f"| `{stack}` | " + " | ".join(cell(r) for r in stack_results) + " |")
    lines += [
        "",
        "Skipped online checks need the `PULUMI_ACCESS_TOKEN` secret; the gate needs "
        "a Prometheus URL. The gate is advisory: rollbacks are never blocked.",
        "",
    ]
    skeleton = "\n".join(lines)
    shown = [r for stack_results in results.values() for r in stack_results if r.body or r.note]
    budget = (limit - len(skeleton) - 400 * (len(shown) + len(results))) // max(len(shown), 1)
    budget = max(500, min(PART_LIMIT, budget))
    for stack, stack_results in results.items():
        lines += [f"#### `{stack}`", ""]
        lines += [_details(r, budget) + "\n" for r in stack_results if r.body or r.note]
    return "\n".join(lines).rstrip() + "\n"
