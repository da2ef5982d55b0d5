"""Replica arithmetic: how many pods each backend runs at a given Ascend weight.

The formula (pure functions, tested without Pulumi):

    ascend = max(1, ceil(total * w/100 * headroom / ascend_capacity_ratio))
    nvidia = total                      while w < 100
           = retired_nvidia_replicas    at w == 100

- `total` is the NVIDIA replica count that serves 100% of traffic (the article's 4).
- Ascend is over-provisioned by `headroom` on its share and scaled by how much one Ascend pod
  serves relative to one NVIDIA pod. It never drops below one pod, so the precision check has
  a warm Ascend backend to compare even at weight 0.
- NVIDIA stays sized for all traffic until the migration is complete, so an emergency rollback
  (weight -> 0) never lands on a shrunken pool: the failure the seed article's fixed replica
  count invites once NVIDIA is scaled down mid-migration.
"""

import math


def ascend_replicas(
    total_replicas: int, weight: int, headroom: float, ascend_capacity_ratio: float
) -> int:
    """Ascend pods for `weight` % of traffic; at least 1.

    Raises ValueError when weight is outside 0..100 or a factor is not positive.
    """
    _check(total_replicas, weight, headroom, ascend_capacity_ratio)
    # round() first so that float noise (4 * 0.2 * 1.25 = 1.0000000000000002) cannot add a pod.
    needed = round(total_replicas * weight / 100 * headroom / ascend_capacity_ratio, 9)
    return max(1, math.ceil(needed))


def nvidia_replicas(total_replicas: int, weight: int, retired_replicas: int) -> int:
    """NVIDIA pods: all of `total_replicas` until weight is 100, then `retired_replicas`.

    Raises ValueError when weight is outside 0..100.
    """
    _check(total_replicas, weight, 1.0, 1.0)
    return total_replicas if weight < 100 else retired_replicas


def _check(total_replicas: int, weight: int, headroom: float, ratio: float) -> None:
    if not 0 <= weight <= 100:
        raise ValueError(f"weight {weight} is outside 0..100")
    if total_replicas < 1 or headroom <= 0 or ratio <= 0:
        raise ValueError("total_replicas, headroom and ascend_capacity_ratio must be positive")
