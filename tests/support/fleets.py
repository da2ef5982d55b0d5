"""Generated fleets for the render's identity test and the benchmarks: `size` services on
rungs 0/5/20/50 in turn, each with its verified pair, on pools large enough for all of them."""

from __future__ import annotations

from typing import Any

RUNGS = (0, 5, 20, 50)


def fleet(size: int) -> dict[str, Any]:
    """Stack keys (no project prefix) of a fleet of `size` services `svc-0`... in namespace
    `fleet`, on `size // 2 + 3` NVIDIA and as many Ascend nodes."""
    services = {}
    for i in range(size):
        release = f"v1.{i}.0"
        cuda, npu = f"registry/svc-{i}:{release}-cuda", f"registry/svc-{i}:{release}-npu"
        services[f"svc-{i}"] = {
            "ascendWeight": RUNGS[i % len(RUNGS)],
            "nvidia": {"image": cuda},
            "ascend": {"image": npu},
            "capacity": {"totalReplicas": 1},
            "verifiedImages": [{"nvidia": cuda, "ascend": npu}],
        }
    nodes = {hw: [f"{hw}-{n:02d}" for n in range(size // 2 + 3)] for hw in ("nvidia", "ascend")}
    return {
        "namespace": "fleet",
        "nvidia": {"pool": {"nodes": nodes["nvidia"]}},
        "ascend": {"pool": {"nodes": nodes["ascend"]}},
        "services": services,
    }
