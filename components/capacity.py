"""Replica arithmetic: how many pods each backend runs at a given Ascend weight.

The formula (pure functions, tested without Pulumi):

    ascend = 1                                                              at w == 0
           = max(2, ceil(total * w/100 * headroom / ascend_capacity_ratio))  while w > 0
    nvidia = max(2, total)                                                  while w < 100
           = retired_nvidia_replicas                                        at w == 100

- `total` is the NVIDIA replica count that serves 100% of traffic (the article's 4).
- Ascend is over-provisioned by `headroom` on its share and scaled by how much one Ascend pod
  serves relative to one NVIDIA pod. It never drops below one pod, so the precision check has
  a warm Ascend backend to compare even at weight 0.
- NVIDIA stays sized for all traffic until the migration is complete, so an emergency rollback
  (weight -> 0) never lands on a shrunken pool: the failure the seed article's fixed replica
  count invites once NVIDIA is scaled down mid-migration.
- A backend that takes traffic (Ascend above 0%, NVIDIA below 100%) runs at least
  `MIN_SERVING_REPLICAS` pods. Each Deployment has a PodDisruptionBudget with `maxUnavailable:
  1` (`components.workloads`): the eviction API lets a drain take a pod only while the others
  are ready (kubernetes.io/docs/concepts/workloads/pods/disruptions), so with two pods a
  voluntary disruption (node drain, cluster upgrade) evicts one, waits until its replacement
  is ready, and the subset always keeps a ready pod. With one pod the budget allows evicting
  it: the subset has no endpoint (503) until the replacement is ready, minutes for a model
  load. The cost: one more accelerator x `acceleratorsPerPod` for Ascend at the low rungs
  (where the formula gives one pod), and for NVIDIA only when `totalReplicas` is 1.
"""

import math

MIN_SERVING_REPLICAS = 2
"""Fewest pods of a backend that takes traffic: with the PDB's `maxUnavailable: 1`, a drain
never leaves it without a ready pod. (`policies.disruption` holds the same number.)"""


def ascend_replicas(
    total_replicas: int, weight: int, headroom: float, ascend_capacity_ratio: float
) -> int:
    """Ascend pods for `weight` % of traffic: 1 at weight 0 (warm, for the precision check),
    else at least `MIN_SERVING_REPLICAS`.

    Raises ValueError naming the argument when weight is outside 0..100, total_replicas is
    below 1, or headroom or ascend_capacity_ratio is not above 0.
    """
    _check(total_replicas, weight, headroom=headroom, ascend_capacity_ratio=ascend_capacity_ratio)
    if weight == 0:
        return 1
    # round() first so that float noise (4 * 0.2 * 1.25 = 1.0000000000000002) cannot add a pod.
    needed = round(total_replicas * weight / 100 * headroom / ascend_capacity_ratio, 9)
    return max(MIN_SERVING_REPLICAS, math.ceil(needed))


def nvidia_replicas(total_replicas: int, weight: int, retired_replicas: int) -> int:
    """NVIDIA pods: all of `total_replicas` (at least `MIN_SERVING_REPLICAS`) until weight is
    100, then `retired_replicas` (NVIDIA takes no traffic there).

    Raises ValueError naming the argument when weight is outside 0..100 or total_replicas is
    below 1.
    """
    _check(total_replicas, weight)
    return max(MIN_SERVING_REPLICAS, total_replicas) if weight < 100 else retired_replicas


def _check(total_replicas: int, weight: int, **factors: float) -> None:
    """Raises ValueError naming the first argument out of range: `weight` outside 0..100,
    `total_replicas` below 1, a factor (`headroom=`, `ascend_capacity_ratio=`) not above 0."""
    if not 0 <= weight <= 100:
        raise ValueError(f"weight {weight} is outside 0..100")
    if total_replicas < 1:
        raise ValueError(f"total_replicas {total_replicas} is below 1")
    for name, value in factors.items():
        if value <= 0:
            raise ValueError(f"{name} {value} is not above 0")
