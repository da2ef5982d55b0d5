"""Speed: every policy of the pack over a stack of 1,000 resources (`make bench`)."""

from __future__ import annotations

import copy

import pytest

from components.settings import load_settings
from dualstack.offline.policy_run import run_policies
from policies import POLICIES
from tests.conftest import cfg
from tests.conftest import find as find_object
from tests.support.pack_config import single_pack_config

STACK_SIZE = 1_000
CONFIG = cfg(ascendWeight="20", verifiedAscendImage="registry/inference-service:v1.2.3-npu")


def filler(index: int, template: dict) -> dict:
    """A hardened side workload, a Service or a ConfigMap, named by `index`."""
    name = f"side-{index:04d}"
    kind = ("Deployment", "Service", "ConfigMap")[index % 3]
    if kind == "Deployment":
        obj = copy.deepcopy(template)
        obj["metadata"] = {"name": name, "namespace": "tools", "labels": {"app": name}}
        spec = obj["spec"]
        spec["selector"] = {"matchLabels": {"app": name}}
        spec["template"]["metadata"]["labels"] = {"app": name}
        pod = spec["template"]["spec"]
        for key in ("nodeSelector", "tolerations", "volumes"):
            pod.pop(key, None)
        container = pod["containers"][0]
        container.pop("volumeMounts", None)
        for section in ("requests", "limits"):
            container["resources"][section].pop("nvidia.com/gpu", None)
        return obj
    if kind == "Service":
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": "tools"},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}]},
        }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "tools"},
        "data": {"key": "value"},
    }


@pytest.mark.benchmark
def test_all_policies_over_1000_resources(benchmark, render_objects):
    objects = render_objects(CONFIG)
    template = find_object(objects, "Deployment", "inference-blue")
    objects += [filler(i, template) for i in range(STACK_SIZE - len(objects))]
    assert len(objects) == STACK_SIZE
    settings = load_settings(CONFIG)
    config = single_pack_config(settings, previous_weight=5, base=settings, envelope=())

    results = benchmark(run_policies, objects, config, "bench")

    outcomes = {(r.policy, r.outcome) for r in results}
    assert ("accelerator-driver-hostpath", "advisory") in outcomes
    assert [r for r in results if r.outcome == "violation"] == []
    assert len({r.policy for r in results}) == len(POLICIES)
