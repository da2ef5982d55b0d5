"""Pod arithmetic for the capacity policies: how many pods a workload runs at the peak of a
rollout, and how many accelerators each of its pods takes.

Kubernetes facts used (kubernetes.io, "Deployments", "DaemonSet", "StatefulSets", "Jobs",
"Resource Management for Pods and Containers", "Sidecar Containers"):

- a Deployment's rolling update runs up to `replicas + maxSurge` pods; `maxSurge` defaults to
  25% and a percentage is rounded UP; the `Recreate` strategy never surges; a rollout happens
  only when the pod template (`spec.template`) changes: a change of `replicas` alone scales the
  current ReplicaSet, with no surge;
- a DaemonSet runs one pod per node it selects; its rolling update surges by `maxSurge`
  (default 0; a percentage of those nodes, rounded up); `OnDelete` never surges;
- a StatefulSet and a ReplicaSet never run more than `replicas` pods (default 1);
- a Job runs `parallelism` pods at once (default 1), never more than `completions` when set; a
  CronJob does the same per run;
- a pod's effective request is the larger of (app containers + sidecars) and, for each plain
  init container, its own request plus the sidecars started before it; a limit with no
  request sets the request; extended resources (accelerators) are whole numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policies.common import as_int, mapping, path, sequence
from policies.stack_view import Item

DEFAULT_DEPLOYMENT_SURGE = "25%"
"""`maxSurge` of a Deployment's rolling update when unset (Kubernetes default)."""


class PodCountError(ValueError):
    """A workload's pod count or accelerator request cannot be read; the message names the
    field and the value seen."""


@dataclass(frozen=True)
class PodCount:
    """Pods a workload runs at once at the peak of a rollout, and how that was counted."""

    pods: int
    how: str
    """For messages: `100 replicas + maxSurge 1`, `3 nodes`, `parallelism 2`."""


def canonical(value: Any) -> Any:
    """`value` as plain JSON data: mappings -> dicts, sequences -> lists, whole floats -> ints.

    The engine sends every number as a float (`replicas: 4.0`) inside read-only proxies, the
    render gives ints in dicts: both become the same data here.
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [canonical(v) for v in value]
    return value


def template_hash(template: Any) -> str:
    """sha256 hex digest of the canonical JSON (`canonical`, sorted keys, separators `,` `:`)
    of a pod template (a Deployment's `spec.template`).

    The same function lives in `dualstack/offline/policy_config.py`, which writes the BASE's
    digests into policy config `previousPodTemplates` (the pack imports nothing of the
    project; a test keeps the two equal).
    """
    text = json.dumps(canonical(template), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def whole_quantity(value: Any) -> int | None:
    """A whole, non-negative count from 4, 4.0 or "4"; None for anything else ("1k", -1, "x")."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    number = as_int(value)
    return number if number is not None and number >= 0 else None


def _field(props: Mapping[str, Any], default: int, *keys: str) -> int:
    raw = path(props, *keys)
    if raw is None:
        return default
    number = as_int(raw)
    if number is None or number < 0:
        raise PodCountError(f"{'.'.join(keys)} is {raw!r}, not a whole number")
    return number


def surge(raw: Any, base: int, field: str) -> int:
    """Extra pods of a rolling update: `raw` (an int, or "25%" of `base`, rounded up)."""
    if isinstance(raw, str) and raw.endswith("%"):
        percent = whole_quantity(raw[:-1])
        if percent is not None:
            return math.ceil(base * percent / 100)
    number = as_int(raw)
    if number is None or number < 0:
        raise PodCountError(f"{field} is {raw!r}, neither a whole number nor a percentage")
    return number


def peak_pods(workload: Item, pool_nodes: int, template_changes: bool = True) -> PodCount:
    """Pods `workload` runs at once at the peak of a rollout (facts in the module docstring).

    `pool_nodes` is the node count of its pool (a DaemonSet runs one pod on each);
    `template_changes` False says a Deployment's pod template is the deployed one, so the
    change only scales it (no surge). Raises PodCountError when a count is not a whole number.
    """
    props, kind = workload.props, workload.kind
    if kind == "Pod":
        return PodCount(1, "1 pod")
    if kind in ("Job", "CronJob"):
        keys = ("spec",) if kind == "Job" else ("spec", "jobTemplate", "spec")
        parallel = _field(props, 1, *keys, "parallelism")
        # completions unset: the Job ends at the first success, `parallelism` pods run at once
        parallel = min(parallel, _field(props, parallel, *keys, "completions"))
        return PodCount(parallel, f"parallelism {parallel}")
    if kind == "DaemonSet":
        strategy = mapping(path(props, "spec", "updateStrategy"))
        extra = 0
        if (strategy.get("type") or "RollingUpdate") == "RollingUpdate":
            raw = path(strategy, "rollingUpdate", "maxSurge")
            extra = (
                0
                if raw is None
                else surge(raw, pool_nodes, "spec.updateStrategy.rollingUpdate.maxSurge")
            )
        how = f"{pool_nodes} nodes" + (f" + maxSurge {extra}" if extra else "")
        return PodCount(pool_nodes + extra, how)
    replicas = _field(props, 1, "spec", "replicas")
    if kind != "Deployment":
        return PodCount(replicas, f"{replicas} replicas")
    strategy = mapping(path(props, "spec", "strategy"))
    if strategy.get("type") == "Recreate" or replicas == 0:  # unset type is RollingUpdate
        return PodCount(replicas, f"{replicas} replicas")
    if not template_changes:
        return PodCount(replicas, f"{replicas} replicas, pod template unchanged: no surge")
    raw = path(strategy, "rollingUpdate", "maxSurge")
    given = DEFAULT_DEPLOYMENT_SURGE if raw is None else raw
    extra = surge(given, replicas, "spec.strategy.rollingUpdate.maxSurge")
    if raw is None:
        shown = f"{extra} (default {DEFAULT_DEPLOYMENT_SURGE})"
    else:
        shown = f"{raw} = {extra}" if isinstance(raw, str) else str(extra)
    return PodCount(replicas + extra, f"{replicas} replicas + maxSurge {shown}")


def _container_request(container: Mapping[str, Any], resources: set[str]) -> int:
    """Accelerators (any of `resources`) one container takes: its request, else its limit."""
    section = mapping(container.get("resources"))
    requests, limits = mapping(section.get("requests")), mapping(section.get("limits"))
    total = 0
    for name in sorted(resources):  # sorted: the same resource named first on every run
        raw = requests.get(name, limits.get(name))
        if raw is None:
            continue
        count = whole_quantity(raw)
        if count is None:
            where = f"container {container.get('name') or '?'!r}"
            raise PodCountError(f"{where} requests {name}: {raw!r}, not a whole number")
        total += count
    return total


def accelerators_per_pod(spec: Mapping[str, Any], resources: set[str]) -> int:
    """Accelerators (any of the extended `resources`) one pod of `spec` takes at once.

    Raises PodCountError when a quantity is not a whole number.
    """
    apps = [mapping(c) for c in sequence(spec.get("containers"))]
    total = sum(_container_request(c, resources) for c in apps)
    sidecars = 0
    peak_init = 0
    for init in (mapping(c) for c in sequence(spec.get("initContainers"))):
        if init.get("restartPolicy") == "Always":  # a sidecar keeps running beside the app
            sidecars += _container_request(init, resources)
        else:
            peak_init = max(peak_init, sidecars + _container_request(init, resources))
    return max(total + sidecars, peak_init)


def pack(pods: Iterable[int], nodes: int, per_node: int) -> list[int] | None:
    """Place pods (each the accelerators it requests) on `nodes` nodes of `per_node` devices,
    largest first, each on the first node with room (first-fit decreasing): the free devices
    per node afterwards, or None when some pod finds no node.

    A pod's accelerators all come from one node (a device plugin allocates a node's devices),
    so 3 pods of 6 do not fit 2 nodes of 8 although 18 <= 16 is false and 12 <= 16 is true for
    2 of them. First-fit decreasing finds a placement whenever one exists for pods of one size;
    with mixed sizes it may refuse a tight fit another order would find (fail closed).
    """
    free = [per_node] * nodes
    for size in sorted(pods, reverse=True):
        node = next((i for i, room in enumerate(free) if room >= size), None)
        if node is None:
            return None
        free[node] -= size
    return free
