"""`gate --wait DURATION`: judge again until the gate passes, fails, or the time is up.

Like `kubectl argo rollouts status --timeout` (which returns on Healthy or Degraded, and
fails on the timeout), each evaluation ends the wait or not:

- `passed`: every required criterion of every judged stack passed (exit 0);
- `failed`: a required criterion FAILed that waiting cannot mend (5xx ratio, p99 latency,
  the split, the precision check): exit 1 at once, with that report;
- `pending`: nothing failed that way, but something did not pass yet: a NO_DATA (too little
  or too young data, a rung that changed inside the window), too few requests or a rung
  still baking (`WAITABLE`). The gate judges again after `interval` seconds, each time over
  the window ending then, until `deadline`; still pending then is exit 3 (`timed-out`).

Fails closed: only `passed` is 0, and the last report is the one shown. The wait is bounded
by `MAX_WAIT_SECONDS`, and every evaluation by the gate's own query timeouts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from dualstack.gate.criteria import GateReport

WAITABLE = frozenset({"bake", "requests"})
"""Criteria whose FAIL time can mend: the rung bakes, requests accumulate."""

MAX_WAIT_SECONDS = 7 * 86400
"""The longest `--wait` (a week: longer than any bake time worth waiting for in one job)."""

EXIT_TIMED_OUT = 3
"""`gate --wait`'s exit code when the time ran out with the gate still pending."""

Outcome = Literal["passed", "failed", "pending"]


def outcome(reports: Sequence[GateReport]) -> Outcome:
    """What the reports of one evaluation say for the wait (module docstring)."""
    if all(report.passed for report in reports):
        return "passed"
    for report in reports:
        for criterion in report.criteria:
            if criterion.required and criterion.status == "FAIL" and criterion.key not in WAITABLE:
                return "failed"
    return "pending"


def waiting_on(reports: Sequence[GateReport]) -> str:
    """`prod: bake FAIL, split NO_DATA`: what the gate still waits for."""
    parts = []
    for report in reports:
        open_ = [
            f"{c.key} {c.status}" for c in report.criteria if c.required and c.status != "PASS"
        ]
        if open_:
            parts.append(f"{report.where.removeprefix('stack ')}: {', '.join(open_)}")
    return "; ".join(parts)


@dataclass(frozen=True)
class Waited:
    """How the wait ended: `outcome` (`passed`, `failed`, `timed-out`), the evaluations run,
    the seconds waited, and the last evaluation's result (whatever `evaluate` returns)."""

    outcome: str
    evaluations: int
    seconds: float
    last: object

    @property
    def data(self) -> dict[str, object]:
        """`{"outcome", "evaluations", "seconds"}`: the gate document's `wait` (OUTPUT.md)."""
        return {
            "outcome": self.outcome,
            "evaluations": self.evaluations,
            "seconds": round(self.seconds, 1),
        }


def wait_for_gate(
    evaluate: Callable[[], tuple[object, Sequence[GateReport]]],
    wait_seconds: float,
    interval: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    say: Callable[[str], None],
) -> Waited:
    """Run `evaluate()` (returning (its result, its reports)) until `outcome` is `passed` or
    `failed`, or until `wait_seconds` have passed on `clock`, sleeping `interval` seconds (or
    what is left) in between; `say` gets one line per pending evaluation."""
    started = clock()
    deadline = started + wait_seconds
    count = 0
    while True:
        result, reports = evaluate()
        count += 1
        state = outcome(reports)
        now = clock()
        if state != "pending":
            return Waited(state, count, now - started, result)
        left = deadline - now
        if left <= 0:
            return Waited("timed-out", count, now - started, result)
        pause = min(interval, left)
        say(
            f"gate: pending ({waiting_on(reports)}); evaluation {count}, next in {pause:.0f} s, "
            f"{_left(left)} left of --wait"
        )
        sleep(pause)


def _left(seconds: float) -> str:
    """`1h 5m`, `4m 10s`, `12 s`."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs} s"
