"""Pull-request text for a migration step: a title, and a body a reviewer can decide on.

The body carries the evidence: the weight and replica move, the gate report (or the reason
the gate was skipped), the offline preview (`dualstack preview` output: object changes, diff
and whatever checks it reports), and how to undo the step.
"""

from __future__ import annotations

from components.settings import Settings
from dualstack.step.weights import WeightChange, ladder_text


def _step(change: WeightChange) -> str:
    settings = change.after
    return f"ladder step {settings.ladder_position} of {len(settings.ladder) - 1}"


def promotion_title(change: WeightChange) -> str:
    """`prod: Ascend weight 5% -> 20% (ladder step 2 of 5)`; `fleet/chat: ...` for a member."""
    before, after = change.before.ascend_weight, change.after.ascend_weight
    return f"{change.where}: Ascend weight {before}% -> {after}% ({_step(change)})"


def rollback_title(change: WeightChange) -> str:
    """`prod: roll back Ascend weight 50% -> 0%`; `fleet/chat: ...` for a member."""
    before, after = change.before.ascend_weight, change.after.ascend_weight
    return f"{change.where}: roll back Ascend weight {before}% -> {after}%"


def _service_flag(change: WeightChange) -> str:
    """` --service chat` for a fleet member, "" otherwise."""
    return f" --service {change.service}" if change.service is not None else ""


def _what(change: WeightChange) -> str:
    """`stack `prod``, or `service `chat` of stack `fleet``."""
    if change.service is None:
        return f"stack `{change.stack}`"
    return f"service `{change.service}` of stack `{change.stack}`"


def summary_table(change: WeightChange) -> list[str]:
    """Markdown table: weight, replicas per backend, Ascend image, before and after."""
    nvidia, ascend = change.replicas["nvidia"], change.replicas["ascend"]

    def verified(settings: Settings) -> str:
        return "yes" if settings.ascend_image_verified else "**no**"

    return [
        "| | Before | After |",
        "|---|---|---|",
        f"| Ascend weight | {change.before.ascend_weight}% | {change.after.ascend_weight}% |",
        *(
            [
                f"| Mirrored to Ascend | {change.before.mirror_percent}% | "
                f"{change.after.mirror_percent}% |"
            ]
            if change.before.mirror_percent or change.after.mirror_percent
            else []
        ),
        f"| Ladder | {ladder_text(change.before)} | {ladder_text(change.after)} |",
        f"| NVIDIA pods | {nvidia[0]} | {nvidia[1]} |",
        f"| Ascend pods | {ascend[0]} | {ascend[1]} |",
        f"| Ascend image | `{change.before.ascend.image}` | `{change.after.ascend.image}` |",
        f"| Precision-verified | {verified(change.before)} | {verified(change.after)} |",
    ]


def _preview_section(preview_text: str) -> list[str]:
    return ["### Offline preview", "", "```text", preview_text.rstrip("\n"), "```"]


def envelope_section(changes: list[str]) -> list[str]:
    """`### Safety envelope`: each change `fact: before -> after` (docs/trust-model.md), or
    that the PR is a migration step only."""
    if not changes:
        return ["### Safety envelope", "", "Unchanged: this is a migration step only.", ""]
    return [
        "### Safety envelope",
        "",
        "Besides the step, this pull request changes the safety envelope (docs/trust-model.md): "
        "it needs the owners' approval unless it lowers the weight, and approved it "
        "may not raise a weight or change an image:",
        "",
        *(f"- `{change}`" for change in changes),
        "",
    ]


def promotion_body(
    change: WeightChange,
    gate_markdown: str | None,
    skip_reason: str | None,
    preview_text: str,
    envelope: list[str] | None = None,
) -> str:
    """The PR body of a promotion. Exactly one of `gate_markdown` / `skip_reason` is given."""
    stack, before = change.stack, change.before.ascend_weight
    flag = _service_flag(change)
    lines = [
        f"## {promotion_title(change)}",
        "",
        f"One migration step: `{change.before.weight_key}` of stack `{stack}` moves to the next "
        f"ladder step. How it was written: {change.method}.",
        "",
        *summary_table(change),
        "",
    ]
    if skip_reason is not None:
        lines += [
            "### Promotion gate: SKIPPED",
            "",
            f"The gate was skipped with `--skip-gate`. Reason given: {skip_reason}",
            "",
            "Reviewers: the step rests on this reason alone; check it before approving.",
        ]
    else:
        lines.append((gate_markdown or "").rstrip("\n"))
    lines += [""]
    lines += envelope_section(envelope) if envelope is not None else []
    lines += [*_preview_section(preview_text), ""]
    lines += [
        "### Undo",
        "",
        f"`dualstack rollback --stack {stack}{flag} --to {before}`, or revert this PR's commit: "
        "both give the same stack file. For an emergency, `dualstack rollback --stack "
        f"{stack}{flag}` (to 0%) prints the fastest path.",
    ]
    return "\n".join(lines) + "\n"


def rollback_body(
    change: WeightChange, preview_text: str, how: list[str], envelope: list[str] | None = None
) -> str:
    """The PR body of a rollback: the move, how it is applied fast, and the preview."""
    lines = [
        f"## {rollback_title(change)}",
        "",
        f"Rollback of {_what(change)}; rollbacks skip the gate, lowering the weight is "
        f"always allowed. How it was written: {change.method}.",
        "",
        *summary_table(change),
        "",
        *_apply_and_review(how, envelope, preview_text),
    ]
    return "\n".join(lines) + "\n"


def fleet_rollback_title(stack: str, changes: list[WeightChange]) -> str:
    """`fleet: roll back chat 50% -> 0%, embedder 20% -> 0%` (`rollback --all`)."""
    moves = ", ".join(
        f"{c.before.name} {c.before.ascend_weight}% -> {c.after.ascend_weight}%" for c in changes
    )
    return f"{stack}: roll back {moves}"


def fleet_rollback_body(
    stack: str,
    changes: list[WeightChange],
    preview_text: str,
    how: list[str],
    envelope: list[str] | None = None,
) -> str:
    """The PR body of a rollback of several services of one stack in one change: a table of
    each service's weight and pods, how it is applied fast, and the preview."""
    rows = []
    for change in changes:
        nvidia, ascend = change.replicas["nvidia"], change.replicas["ascend"]
        rows.append(
            f"| `{change.before.name}` | {change.before.ascend_weight}% -> "
            f"{change.after.ascend_weight}% | {nvidia[0]} -> {nvidia[1]} | "
            f"{ascend[0]} -> {ascend[1]} |"
        )
    lines = [
        f"## {fleet_rollback_title(stack, changes)}",
        "",
        f"Rollback of {len(changes)} services of stack `{stack}` in one change; rollbacks skip "
        f"the gate, lowering the weight is always allowed. How it was written: "
        f"{changes[0].method}.",
        "",
        "| Service | Ascend weight | NVIDIA pods | Ascend pods |",
        "|---|---|---|---|",
        *rows,
        "",
        *_apply_and_review(how, envelope, preview_text),
    ]
    return "\n".join(lines) + "\n"


def commit_message(title: str, notes: list[str]) -> str:
    """`title`, a blank line, then `notes` (one per line)."""
    return title + ("\n\n" + "\n".join(notes) if notes else "") + "\n"


def _apply_and_review(how: list[str], envelope: list[str] | None, preview_text: str) -> list[str]:
    """A rollback body's tail: "Applying it now" (the SOP `how` as a shell block, its prose
    as comments), then the envelope section (when given) and the offline preview."""
    return [
        "### Applying it now",
        "",
        "```sh",
        *(line.removeprefix("  ") if line.startswith("  ") else f"# {line}" for line in how),
        "```",
        "",
        *(envelope_section(envelope) if envelope is not None else []),
        *_preview_section(preview_text),
    ]
