"""The rollback SOP's commands: URNs that name real resources, a kubectl patch that works."""

from __future__ import annotations

import json
import shlex

import pytest

from components.routers import gateway_api, istio
from components.settings import Fleet, load_fleet, load_settings
from dualstack.step.emergency import (
    break_glass_patches,
    deployment_urn,
    instructions,
    prometheus_rule_urn,
    route_urn,
    scale_command,
    targeted_up,
)
from tests.conftest import PROJECT, cfg

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
        route_urn(istio, settings, "prod"),
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
    at_100 = load_fleet(cfg(ascendWeight="100"))
    at_50 = load_fleet(cfg(ascendWeight="50"))
    at_0 = load_fleet(cfg(ascendWeight="0"))
    assert "--target" in targeted_up(at_50, at_0, "prod")
    # the VirtualService, then the PrometheusRule recording the weight
    assert targeted_up(at_50, at_0, "prod").count("--target") == 2
    assert targeted_up(at_100, at_0, "prod").count("--target") == 3
    assert targeted_up(at_50, at_0, "prod").endswith("PrometheusRule::inference-monitoring-rules'")
    no_monitoring = load_fleet(cfg(ascendWeight="0", monitoring={"enabled": False}))
    assert targeted_up(at_50, no_monitoring, "prod").count("--target") == 1
    steps = instructions(at_100, at_0, "prod")
    assert any("rollout status deployment inference-blue" in line for line in steps)


GATEWAY_API = {"router": "gateway-api"}


def test_the_httproute_urn_names_the_registered_route(run_stack):
    config = cfg(ascendWeight="20", **GATEWAY_API)
    resources = registered(run_stack, config)
    urn = route_urn(gateway_api, load_settings(config), "prod")
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
    command = targeted_up(Fleet.of(at_50), Fleet.of(at_0), "prod")
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
    command = targeted_up(Fleet.of(before), Fleet.of(after), "prod")
    assert ":HTTPRoute::" in command and ":VirtualService::" in command
    assert len(break_glass_patches(after)) == 2


VS_URN = (
    "urn:pulumi:prod::dualstack-inference::dualstack:index:DualStackInference"
    "$dualstack:index:TrafficSplit$kubernetes:networking.istio.io/v1:VirtualService"
    "::inference-traffic-virtual-service"
)
NVIDIA_URN = (
    "urn:pulumi:prod::dualstack-inference::dualstack:index:DualStackInference"
    "$dualstack:index:InferenceWorkload$kubernetes:apps/v1:Deployment"
    "::inference-nvidia-deployment"
)
RULE_URN = (
    "urn:pulumi:prod::dualstack-inference::dualstack:index:DualStackInference"
    "$dualstack:index:UnifiedMonitoring$kubernetes:monitoring.coreos.com/v1:PrometheusRule"
    "::inference-monitoring-rules"
)
LAND = (
    "Then land this change in git (commit, PR, merge) and let the next full `pulumi up` "
    "resize the rest."
)
BREAK_GLASS = (
    "Break-glass without Pulumi (acts at once, but the next `pulumi up` takes the fields back "
    "from kubectl-patch and overwrites it with the weight of the commit it deploys, so land "
    "this commit first):"
)


def patch_line(nvidia: int, ascend: int) -> str:
    # The split is http[2]: after the two tester pins.
    ops = (
        '[{"op":"test","path":"/spec/http/2/route/0/destination/subset","value":"nvidia"},'
        '{"op":"test","path":"/spec/http/2/route/1/destination/subset","value":"ascend"},'
        f'{{"op":"replace","path":"/spec/http/2/route/0/weight","value":{nvidia}}},'
        f'{{"op":"replace","path":"/spec/http/2/route/1/weight","value":{ascend}}}]'
    )
    return (
        "  kubectl -n inference patch virtualservices.networking.istio.io inference-vs "
        f"--type json -p '{ops}'"
    )


def test_rollback_from_full_ascend_scales_nvidia_first_then_moves_traffic():
    # 4 pods in all; at 100% Ascend one NVIDIA pod is kept (retiredNvidiaReplicas 1), at 0%
    # NVIDIA needs all 4 back before it takes the traffic.
    before, after = load_settings(cfg(ascendWeight="100")), load_settings(cfg(ascendWeight="0"))
    assert instructions(Fleet.of(before), Fleet.of(after), "prod") == [
        "Fastest safe path (applies only the traffic split, after scaling NVIDIA back up):",
        f"  pulumi up --stack prod --target '{NVIDIA_URN}' --target '{VS_URN}' "
        f"--target '{RULE_URN}'",
        LAND,
        BREAK_GLASS,
        "  kubectl -n inference scale deployment inference-blue --replicas=4"
        "   # first: capacity for the traffic",
        "  kubectl -n inference rollout status deployment inference-blue",
        patch_line(100, 0),
    ]


def test_rollback_that_keeps_nvidia_at_its_size_only_moves_traffic():
    # 50% -> 20%: NVIDIA runs 4 pods at both weights (full capacity while Ascend is partial).
    before, after = load_settings(cfg(ascendWeight="50")), load_settings(cfg(ascendWeight="20"))
    assert instructions(Fleet.of(before), Fleet.of(after), "prod") == [
        "Fastest safe path (applies only the traffic split):",
        f"  pulumi up --stack prod --target '{VS_URN}' --target '{RULE_URN}'",
        LAND,
        BREAK_GLASS,
        patch_line(80, 20),
    ]


def test_scale_command_names_the_backend_deployment_and_its_pods():
    settings = load_settings(cfg(ascendWeight="20"))
    assert scale_command(settings, "ascend") == (
        "kubectl -n inference scale deployment inference-green --replicas=2"
    )
    assert scale_command(settings, "nvidia") == (
        "kubectl -n inference scale deployment inference-blue --replicas=4"
    )


def test_a_fleet_members_rollback_targets_its_own_registered_httproute(run_stack):
    """Under gateway-api each member's split is its own HTTPRoute (`<name>-route`); a fleet
    rollback of chat targets chat's, registered under chat's traffic component."""
    from components.settings import load_fleet
    from tests.conftest import fleet_config

    config = {**fleet_config(), **cfg(router="gateway-api")}
    resources = {(r.type_, r.name) for r in run_stack(config, "fleet")}
    before = load_fleet(config)
    services = json.loads(json.dumps(config[f"{PROJECT}:services"]))
    services["chat"]["ascendWeight"] = 0
    after = load_fleet({**config, f"{PROJECT}:services": services})
    command = targeted_up(before, after, "fleet")
    urn = (
        "urn:pulumi:fleet::dualstack-inference::dualstack:index:DualStackInference$"
        "dualstack:index:TrafficSplit$kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
        "::inference-chat-traffic-http-route"
    )
    assert f"--target {shlex.quote(urn)}" in command
    assert command.count("--target") == 2  # chat's HTTPRoute and chat's PrometheusRule
    assert (urn.split("$")[-1].split("::")[0], urn.rsplit("::", 1)[1]) in resources
    patches = break_glass_patches(after.member("chat"))
    assert len(patches) == 1
    assert "patch httproutes.gateway.networking.k8s.io chat-route" in patches[0]
