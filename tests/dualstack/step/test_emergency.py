"""The rollback SOP's commands: URNs that name real resources, a kubectl patch that works."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from components.settings import load_settings
from dualstack.offline.render import render, to_yaml
from dualstack.step.emergency import (
    break_glass_patch,
    break_glass_patches,
    deployment_urn,
    http_route_patch,
    httproute_urn,
    instructions,
    prometheus_rule_urn,
    targeted_up,
    virtual_service_urn,
    weight_patch,
)
from tests.conftest import cfg, find

# The tokens and names a user passes to `pulumi up --target` (stated here, not imported).
TOP = ("dualstack:index:DualStackInference", "inference")
TRAFFIC_TYPE = "dualstack:index:TrafficSplit"
WORKLOAD_TYPE = "dualstack:index:InferenceWorkload"
MONITORING_TYPE = "dualstack:index:UnifiedMonitoring"


def registered(run_stack, config):
    return {(r.type_, r.name) for r in run_stack(config, "prod")}


@pytest.mark.parametrize("api_version", ["networking.istio.io/v1", "networking.istio.io/v1beta1"])
def test_urns_name_resources_the_program_registers(run_stack, api_version):
    config = cfg(ascendWeight="20", istio=json.dumps({"apiVersion": api_version}))
    resources = registered(run_stack, config)
    settings = load_settings(config)
    urns = (
        virtual_service_urn(settings, "prod"),
        deployment_urn("prod", "nvidia"),
        prometheus_rule_urn("prod"),
    )
    for urn in urns:
        stack, project, types, name = urn.removeprefix("urn:pulumi:").split("::")
        assert (stack, project) == ("prod", "dualstack-inference")
        chain = types.split("$")
        assert (chain[-1], name) in resources  # the resource itself
        assert chain[0] == TOP[0] and (TOP[0], TOP[1]) in resources
        assert chain[1] in (TRAFFIC_TYPE, WORKLOAD_TYPE, MONITORING_TYPE)
    parents = {name for type_, name in resources if type_ in (TRAFFIC_TYPE, WORKLOAD_TYPE)}
    assert {"inference-traffic", "inference-nvidia"} <= parents


def test_targeted_up_adds_nvidia_only_when_it_must_grow():
    at_100 = load_settings(cfg(ascendWeight="100"))
    at_50 = load_settings(cfg(ascendWeight="50"))
    at_0 = load_settings(cfg(ascendWeight="0"))
    assert "--target" in targeted_up(at_50, at_0, "prod")
    # the VirtualService, then the PrometheusRule recording the weight
    assert targeted_up(at_50, at_0, "prod").count("--target") == 2
    assert targeted_up(at_100, at_0, "prod").count("--target") == 3
    assert targeted_up(at_50, at_0, "prod").endswith("PrometheusRule::inference-monitoring-rules'")
    no_monitoring = load_settings(cfg(ascendWeight="0", monitoring={"enabled": False}))
    assert targeted_up(at_50, no_monitoring, "prod").count("--target") == 1
    steps = instructions(at_100, at_0, "prod")
    assert any("rollout status deployment inference-blue" in line for line in steps)


def test_weight_patch_guards_route_order():
    # The split is the third route: after the two tester pins.
    patch = weight_patch(load_settings(cfg(ascendWeight="0")))
    assert patch[:2] == [
        {"op": "test", "path": "/spec/http/2/route/0/destination/subset", "value": "nvidia"},
        {"op": "test", "path": "/spec/http/2/route/1/destination/subset", "value": "ascend"},
    ]
    assert [p["value"] for p in patch[2:]] == [100, 0]
    unpinned = weight_patch(load_settings(cfg(ascendWeight="0", testerPinning={"enabled": False})))
    assert unpinned[0]["path"] == "/spec/http/0/route/0/destination/subset"


GATEWAY_API = {"router": "gateway-api"}


def test_httproute_urn_names_the_registered_route(run_stack):
    config = cfg(ascendWeight="20", **GATEWAY_API)
    resources = registered(run_stack, config)
    urn = httproute_urn("prod")
    assert urn == (
        "urn:pulumi:prod::dualstack-inference::dualstack:index:DualStackInference$"
        "dualstack:index:TrafficSplit$kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
        "::inference-traffic-http-route"
    )
    _, _, types, name = urn.removeprefix("urn:pulumi:").split("::")
    assert (types.split("$")[-1], name) in resources
    assert not any(t.endswith(":VirtualService") for t, _ in resources)


def test_gateway_api_rollback_targets_the_httproute_not_a_virtual_service():
    at_50 = load_settings(cfg(ascendWeight="50", **GATEWAY_API))
    at_0 = load_settings(cfg(ascendWeight="0", **GATEWAY_API))
    command = targeted_up(at_50, at_0, "prod")
    assert command.count("--target") == 2
    assert ":HTTPRoute::inference-traffic-http-route" in command
    assert "VirtualService" not in command
    patches = break_glass_patches(at_0)
    assert len(patches) == 1
    assert patches[0].startswith("kubectl -n inference patch httproutes.gateway.networking.k8s.io")
    assert " inference-route " in patches[0]


def test_cut_over_with_classic_gateways_targets_both_route_objects():
    """`istio.gateways` still set under gateway-api: the VirtualService serves those gateways,
    so an emergency moves both objects."""
    config = dict(ascendWeight="0", istio={"gateways": ["istio-system/public"]}, **GATEWAY_API)
    after = load_settings(cfg(**config))
    before = load_settings(cfg(**{**config, "ascendWeight": "20"}))
    command = targeted_up(before, after, "prod")
    assert ":HTTPRoute::" in command and ":VirtualService::" in command
    assert len(break_glass_patches(after)) == 2


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.parametrize(("before", "after"), [(50, 0), (100, 80), (20, 5)])
def test_break_glass_patch_gives_the_rendered_httproute(tmp_path, before, after):
    """`kubectl patch --local` of the deployed HTTPRoute gives the one the rollback renders."""
    _, objects = render(cfg(ascendWeight=str(before), **GATEWAY_API), "prod")
    current = tmp_path / "route.yaml"
    current.write_text(to_yaml([find(objects, "HTTPRoute", "inference-route")]))
    settings, wanted = render(cfg(ascendWeight=str(after), **GATEWAY_API), "prod")
    patch = json.dumps(http_route_patch(settings))
    kubectl = ["kubectl", "patch", "--local", "-f", str(current), "--type", "json"]
    done = subprocess.run(
        [*kubectl, "-p", patch, "-o", "yaml"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert yaml.safe_load(done.stdout) == find(wanted, "HTTPRoute", "inference-route")


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.parametrize(("before", "after"), [(50, 0), (100, 80), (20, 5)])
def test_break_glass_patch_gives_the_rendered_virtual_service(tmp_path, before, after):
    """`kubectl patch --local` (offline) applied to the deployed VirtualService must give
    exactly the VirtualService that the rollback commit renders."""
    _, objects = render(cfg(ascendWeight=str(before)), "prod")
    current = tmp_path / "vs.yaml"
    current.write_text(to_yaml([find(objects, "VirtualService", "inference-vs")]))
    settings, wanted = render(cfg(ascendWeight=str(after)), "prod")
    command = break_glass_patch(settings)
    assert command.startswith("kubectl -n inference patch virtualservices.networking.istio.io ")
    patch = json.dumps(weight_patch(settings))
    done = subprocess.run(
        [
            "kubectl",
            "patch",
            "--local",
            "-f",
            str(current),
            "--type",
            "json",
            "-p",
            patch,
            "-o",
            "yaml",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert yaml.safe_load(done.stdout) == find(wanted, "VirtualService", "inference-vs")
