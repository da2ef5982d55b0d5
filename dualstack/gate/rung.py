"""The rung the traffic data was taken at, and the step the gate judges from it.

A rung is the Ascend route weight and, at weight 0, the share of requests mirrored to Ascend
(`mirrorPercent`). The deployed PrometheusRule records both as 0..1 ratios
(`components.monitoring.metric_names` ASCEND_WEIGHT and ASCEND_MIRROR, labels `hardware`
and `namespace`), so Prometheus says which rung was live, and since when: evidence from
outside the pull request, unlike any date or clock the stack file could carry.

Rules older than the shadow rung record no mirror: they could not render one either, so an
absent mirror series is a 0% mirror.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from components.monitoring.metric_names import ASCEND_MIRROR, ASCEND_WEIGHT
from components.monitoring.rules import scope_labels
from components.settings import Settings
from dualstack.gate.prometheus import PrometheusClient, describe_value
from dualstack.gate.query_texts import Scope, over_window


@dataclass(frozen=True)
class Rung:
    """Weight and mirrored share in % (the latest recorded in the window, or the stack file's
    when nothing usable is recorded); `changed` says what moved within the window, if
    anything, and `problem` why a recorded rung was unusable."""

    weight: int
    mirror: int
    recorded: bool
    changed: str | None = None
    problem: str | None = None
    """Why the recorded rung could not be read (a NaN, an infinity, a value outside 0..1
    such as a percent where a ratio is recorded); the weight and mirror are then the stack
    file's, and the split is NO_DATA, never judged against them."""

    @property
    def text(self) -> str:
        """`20%`, or `0% with 10% mirrored`."""
        return f"{self.weight}% with {self.mirror}% mirrored" if self.mirror else f"{self.weight}%"


class Unreadable(ValueError):
    """A recorded rung value that is not a 0..1 ratio; `str()` says which and why."""


def _values(client: PrometheusClient, metric: str, promql: str, at: float) -> list[float]:
    """The sample values of `promql`; raises Unreadable when one is not a 0..1 ratio (NaN, an
    infinity, or a percent such as 20 where 0.2 is recorded)."""
    values = [s.value for s in client.query(promql, at)]
    bad = next((v for v in values if not (math.isfinite(v) and 0 <= v <= 1)), None)
    if bad is not None:
        raise Unreadable(
            f"{metric} is recorded as {describe_value(bad)}, not a 0..1 ratio: the live rung "
            "cannot be read (check the deployed recording rules)"
        )
    return values


def recorded_range(
    client: PrometheusClient, metric: str, scope: Scope, window_seconds: int, at: float
) -> tuple[int, int, int] | None:
    """(lowest, highest, latest) value in % of a recorded 0..1 ratio over the window ending at
    `at` in `scope` (a namespace, or `scope_labels` of a fleet member), or None when there is
    none. Raises Unreadable when a value is not a 0..1 ratio (`_values`)."""
    found = []
    for function in ("min_over_time", "max_over_time", "last_over_time"):
        values = _values(client, metric, over_window(function, metric, scope, window_seconds), at)
        if not values:
            return None
        found.append(round((min if function == "min_over_time" else max)(values) * 100))
    low, high, latest = found
    return low, high, latest


def window_rung(
    settings: Settings, client: PrometheusClient, window_seconds: int, at: float
) -> Rung:
    """The rung of the window ending at `at`: recorded when the rules record a weight, else
    the stack file's (`recorded` False; with `problem` set when what they record is not a
    0..1 ratio)."""
    ns = scope_labels(settings)
    try:
        weight = recorded_range(client, ASCEND_WEIGHT, ns, window_seconds, at)
        mirror = recorded_range(client, ASCEND_MIRROR, ns, window_seconds, at) or (0, 0, 0)
    except Unreadable as exc:
        return Rung(settings.ascend_weight, settings.mirror_percent, False, problem=str(exc))
    if weight is None:
        return Rung(settings.ascend_weight, settings.mirror_percent, recorded=False)
    changes = []
    if weight[0] != weight[1]:
        changes.append(f"the recorded weight moved between {weight[0]}% and {weight[1]}%")
    if mirror[0] != mirror[1]:
        changes.append(f"the recorded mirror moved between {mirror[0]}% and {mirror[1]}%")
    return Rung(weight[2], mirror[2], recorded=True, changed="; ".join(changes) or None)


def judged_step(
    settings: Settings, rung: Rung, step: tuple[int, int | None] | None = None
) -> tuple[int, int | None]:
    """(from, to) weights in % of the step the gate judges.

    `step` given (promote): that step. Otherwise from the live rung (`rung`, recorded): to the
    stack file's weight when it differs (a change under review, or written but not deployed),
    else to the stack file's next ladder step (None at the top).
    """
    if step is not None:
        return step
    if settings.ascend_weight != rung.weight:
        return rung.weight, settings.ascend_weight
    return rung.weight, settings.next_step
