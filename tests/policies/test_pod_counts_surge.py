"""`policies.pod_counts.surge`: the extra pods of a rolling update. Kubernetes rounds a
percentage `maxSurge` up (k8s.io/api apps/v1 RollingUpdateDeployment: "Absolute number is
calculated from percentage by rounding up"); 0 is allowed (with `maxUnavailable` above 0)."""

from __future__ import annotations

import pytest

from policies.pod_counts import PodCountError, surge


@pytest.mark.parametrize(
    ("raw", "base", "pods"),
    [
        ("25%", 4, 1),
        ("25%", 5, 2),
        ("1%", 101, 2),
        ("1%", 100, 1),
        ("0%", 8, 0),
        ("100%", 3, 3),
        (0, 4, 0),
        (2, 4, 2),
    ],
)
def test_surge_is_a_whole_number_or_a_percentage_rounded_up(raw, base, pods):
    assert surge(raw, base, "maxSurge") == pods


@pytest.mark.parametrize("raw", [-1, "-1", "3", "x%", "abc", 1.5, None, "-5%"])
def test_a_surge_that_is_not_a_count_names_the_field(raw):
    """A string without `%` is not a count either: IntOrString "3" is an invalid percent."""
    with pytest.raises(PodCountError) as caught:
        surge(raw, 4, "spec.strategy.rollingUpdate.maxSurge")
    assert str(caught.value) == (
        f"spec.strategy.rollingUpdate.maxSurge is {raw!r}, neither a whole number nor a percentage"
    )
