"""The ladder: the Ascend weights a service may stand at, in migration order, and its rules.

A ladder is a tuple of percentages rising strictly from 0 to 100 (`(0, 5, 20, 50, 80, 100)`,
config key `ladder`); each entry is a rung (a "ladder step"). These pure functions are the one
definition of what a rung is, which rung comes next and which weights a rollback may go to;
the settings (`Settings.next_step`, the `ascendWeight` check), the policy-pack config and the
CLI (`rollback --to`, `policy-config --previous-weight`) all ask them. The pack itself
(`policies/`) imports nothing of the project: it gets the ladder as policy config.

Problems are returned as text (None when there is none) without the flag or key they concern,
so each caller puts its own name in front (`--to 7: not a ladder step; allowed: ...`).
"""

from __future__ import annotations

from collections.abc import Sequence

Ladder = Sequence[int]
"""Rungs in % Ascend, rising strictly from 0 to 100."""


def shape_problem(rungs: Ladder) -> str | None:
    """Why `rungs` is not a ladder (not rising strictly from 0 to 100), or None."""
    rungs = tuple(rungs)
    if list(rungs) != sorted(set(rungs)) or rungs[:1] != (0,) or rungs[-1:] != (100,):
        return "must rise strictly from 0 to 100, e.g. [0, 5, 20, 50, 80, 100]"
    return None


def allowed(rungs: Ladder) -> str:
    """The rungs as a message lists them: `0, 5, 20, 50, 80, 100`."""
    return ", ".join(map(str, rungs))


def step_problem(rungs: Ladder, weight: int, where: str = "") -> str | None:
    """`not a ladder step{where}; allowed: 0, 5, ...` when `weight` is not a rung, else None.

    `where` names the ladder's owner when the message needs it (` of stack prod`)."""
    if weight in rungs:
        return None
    return f"not a ladder step{where}; allowed: {allowed(rungs)}"


def position(rungs: Ladder, weight: int) -> int:
    """The index of the rung `weight` (0 = all NVIDIA). Raises ValueError off the ladder."""
    return list(rungs).index(weight)


def position_text(rungs: Ladder, weight: int) -> str:
    """`2/5`: the rung's index of the ladder's last index (stack output `ladderPosition`)."""
    return f"{position(rungs, weight)}/{len(rungs) - 1}"


def next_rung(rungs: Ladder, weight: int) -> int | None:
    """The rung after `weight`, or None at the top. Raises ValueError off the ladder."""
    index = position(rungs, weight) + 1
    return rungs[index] if index < len(rungs) else None


def marked(rungs: Ladder, weight: int) -> str:
    """The ladder with one rung bracketed: `0 [5] 20 50 80 100` (none when `weight` is not a
    rung)."""
    return " ".join(f"[{rung}]" if rung == weight else str(rung) for rung in rungs)


def rollback_problem(
    rungs: Ladder,
    current: int | None,
    to: int,
    whose: str = "the current weight",
    where: str = "",
) -> str | None:
    """Why a rollback from `current` to `to` is refused, or None: `to` must be a rung
    (`step_problem`, `where` as there) at or below `current` (raising a weight is `promote`'s
    job and goes through the gate). `current` None checks the rung only (`rollback --all`,
    where a service at or below `to` keeps its weight). `whose` names the weight in the
    message: `above {whose} 20%; ...` (`stack prod's weight`, `service chat's weight`)."""
    if problem := step_problem(rungs, to, where):
        return problem
    if current is not None and to > current:
        return (
            f"above {whose} {current}%; rollback only lowers the weight, use "
            "`dualstack promote` to raise it"
        )
    return None
