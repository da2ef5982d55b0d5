"""The emergency rollback's exact commands, as the on-call engineer pastes them: the
`pulumi up --target` URNs in apply order and the break-glass `kubectl` lines, for one service
and for fleet members, under istio and gateway-api. Expected text is written out by hand."""

from __future__ import annotations

import json
from typing import Any

from components.settings import Fleet, load_fleet, load_settings
from dualstack.step.emergency import (
    break_glass_lines,
    break_glass_patches,
    instructions,
    weight_targets,
)
from tests.conftest import PROJECT, cfg, fleet_config
from tests.dualstack.step.test_emergency import BREAK_GLASS, LAND

FLEET = "urn:pulumi:fleet::dualstack-inference::dualstack:index:DualStackInference"
PROD = "urn:pulumi:prod::dualstack-inference::dualstack:index:DualStackInference"
WORKLOAD = "$dualstack:index:InferenceWorkload$kubernetes:apps/v1:Deployment::"
VS = "$dualstack:index:TrafficSplit$kubernetes:networking.istio.io/v1:VirtualService::"
ROUTE = "$dualstack:index:TrafficSplit$kubernetes:gateway.networking.k8s.io/v1:HTTPRoute::"
RULES = "$dualstack:index:UnifiedMonitoring$kubernetes:monitoring.coreos.com/v1:PrometheusRule::"

CHAT_NVIDIA = f"{FLEET}{WORKLOAD}inference-chat-nvidia-deployment"
CHAT_VS = f"{FLEET}{VS}inference-chat-traffic-virtual-service"
CHAT_ROUTE = f"{FLEET}{ROUTE}inference-chat-traffic-http-route"
CHAT_RULES = f"{FLEET}{RULES}inference-chat-monitoring-rules"
EMBEDDER_NVIDIA = f"{FLEET}{WORKLOAD}inference-embedder-nvidia-deployment"
EMBEDDER_VS = f"{FLEET}{VS}inference-embedder-traffic-virtual-service"
EMBEDDER_RULES = f"{FLEET}{RULES}inference-embedder-monitoring-rules"
RERANKER_VS = f"{FLEET}{VS}inference-reranker-traffic-virtual-service"
RERANKER_RULES = f"{FLEET}{RULES}inference-reranker-monitoring-rules"

FAST = "Fastest safe path (applies only the traffic split):"
FAST_AFTER_SCALING = (
    "Fastest safe path (applies only the traffic split, after scaling NVIDIA back up):"
)

# The split is the third route/rule (index 2): after the two tester pins. NVIDIA 100, Ascend 0.
CHAT_VS_TO_0 = (
    "  kubectl -n inference-fleet patch virtualservices.networking.istio.io chat-vs --type json"
    ' -p \'[{"op":"test","path":"/spec/http/2/route/0/destination/subset","value":"nvidia"},'
    '{"op":"test","path":"/spec/http/2/route/1/destination/subset","value":"ascend"},'
    '{"op":"replace","path":"/spec/http/2/route/0/weight","value":100},'
    '{"op":"replace","path":"/spec/http/2/route/1/weight","value":0}]\''
)
RERANKER_VS_AT_0 = (
    "  kubectl -n inference-fleet patch virtualservices.networking.istio.io reranker-vs"
    ' --type json -p \'[{"op":"test","path":"/spec/http/2/route/0/destination/subset",'
    '"value":"nvidia"},'
    '{"op":"test","path":"/spec/http/2/route/1/destination/subset","value":"ascend"},'
    '{"op":"replace","path":"/spec/http/2/route/0/weight","value":100},'
    '{"op":"replace","path":"/spec/http/2/route/1/weight","value":0}]\''
)
CHAT_ROUTE_TO_0 = (
    "  kubectl -n inference-fleet patch httproutes.gateway.networking.k8s.io chat-route"
    ' --type json -p \'[{"op":"test","path":"/spec/rules/2/backendRefs/0/name",'
    '"value":"chat-nvidia"},'
    '{"op":"test","path":"/spec/rules/2/backendRefs/1/name","value":"chat-ascend"},'
    '{"op":"replace","path":"/spec/rules/2/backendRefs/0/weight","value":100},'
    '{"op":"replace","path":"/spec/rules/2/backendRefs/1/weight","value":0}]\''
)


def fleet(router: str = "istio", drop: str | None = None, **weights: int) -> Fleet:
    """The example fleet (chat 50, embedder 20, reranker 0) with `weights` changed and the
    member `drop` left out."""
    config = {**fleet_config(), **cfg(router=router)}
    services = json.loads(json.dumps(config[f"{PROJECT}:services"]))
    for name, weight in weights.items():
        services[name]["ascendWeight"] = weight
    if drop is not None:
        del services[drop]
    return load_fleet({**config, f"{PROJECT}:services": services})


def single(weight: int, **keys: Any):
    return load_settings(cfg(ascendWeight=str(weight), **keys))


# --- fleet members: their own Deployment, route, rules and kubectl lines -----------------


def test_a_fleet_member_leaving_100_grows_its_own_nvidia_deployment_first():
    assert weight_targets(fleet(chat=100), fleet(chat=0), "fleet") == [
        CHAT_NVIDIA,
        CHAT_VS,
        CHAT_RULES,
    ]


def test_a_fleet_member_leaving_100_scales_its_own_nvidia_then_patches_its_own_vs():
    assert instructions(fleet(chat=100), fleet(chat=0), "fleet") == [
        FAST_AFTER_SCALING,
        f"  pulumi up --stack fleet --target '{CHAT_NVIDIA}' --target '{CHAT_VS}' "
        f"--target '{CHAT_RULES}'",
        LAND,
        BREAK_GLASS,
        "  kubectl -n inference-fleet scale deployment chat-blue --replicas=4"
        "   # first: capacity for the traffic",
        "  kubectl -n inference-fleet rollout status deployment chat-blue",
        CHAT_VS_TO_0,
    ]


def test_two_members_leaving_100_grow_every_nvidia_before_any_traffic_moves():
    # embedder: 2 pods; at 100 its NVIDIA keeps the retired 1, at 20 it needs both.
    before, after = fleet(chat=100, embedder=100), fleet(chat=0, embedder=20)
    assert weight_targets(before, after, "fleet") == [
        CHAT_NVIDIA,
        EMBEDDER_NVIDIA,
        CHAT_VS,
        EMBEDDER_VS,
        CHAT_RULES,
        EMBEDDER_RULES,
    ]


def test_a_member_whose_weight_stays_is_not_targeted_nor_patched():
    before, after = fleet(chat=100), fleet(chat=0)
    assert weight_targets(before, after, "fleet") == [CHAT_NVIDIA, CHAT_VS, CHAT_RULES]
    assert break_glass_lines(before, after, "fleet") == [CHAT_VS_TO_0]


def test_a_service_new_in_the_fleet_is_targeted_without_growing_nvidia():
    # reranker (0%) is added: it counts as moved; there is no old size for NVIDIA to grow from.
    before, after = fleet(drop="reranker"), fleet()
    assert weight_targets(before, after, "fleet") == [RERANKER_VS, RERANKER_RULES]


def test_a_service_new_in_the_fleet_gets_its_patch_and_no_scale_step():
    before, after = fleet(drop="reranker"), fleet()
    assert instructions(before, after, "fleet") == [
        FAST,
        f"  pulumi up --stack fleet --target '{RERANKER_VS}' --target '{RERANKER_RULES}'",
        LAND,
        BREAK_GLASS,
        RERANKER_VS_AT_0,
    ]
    assert break_glass_lines(before, after, "fleet") == [RERANKER_VS_AT_0]


# --- gateway-api: the HTTPRoute's compact, shell-quoted JSON patch ------------------------


def test_gateway_api_fleet_rollback_patches_the_members_httproute_by_backend_names():
    before, after = fleet("gateway-api", chat=50), fleet("gateway-api", chat=0)
    assert break_glass_lines(before, after, "fleet") == [CHAT_ROUTE_TO_0]
    assert instructions(before, after, "fleet") == [
        FAST,
        f"  pulumi up --stack fleet --target '{CHAT_ROUTE}' --target '{CHAT_RULES}'",
        LAND,
        BREAK_GLASS,
        CHAT_ROUTE_TO_0,
    ]


def test_gateway_api_single_service_patch_is_the_exact_kubectl_line():
    assert break_glass_patches(single(20, router="gateway-api")) == [
        "kubectl -n inference patch httproutes.gateway.networking.k8s.io inference-route"
        ' --type json -p \'[{"op":"test","path":"/spec/rules/2/backendRefs/0/name",'
        '"value":"inference-service-nvidia"},'
        '{"op":"test","path":"/spec/rules/2/backendRefs/1/name",'
        '"value":"inference-service-ascend"},'
        '{"op":"replace","path":"/spec/rules/2/backendRefs/0/weight","value":80},'
        '{"op":"replace","path":"/spec/rules/2/backendRefs/1/weight","value":20}]\''
    ]


def test_gateway_api_without_tester_pins_patches_the_first_rule():
    settings = single(5, router="gateway-api", testerPinning={"enabled": False})
    assert break_glass_patches(settings) == [
        "kubectl -n inference patch httproutes.gateway.networking.k8s.io inference-route"
        ' --type json -p \'[{"op":"test","path":"/spec/rules/0/backendRefs/0/name",'
        '"value":"inference-service-nvidia"},'
        '{"op":"test","path":"/spec/rules/0/backendRefs/1/name",'
        '"value":"inference-service-ascend"},'
        '{"op":"replace","path":"/spec/rules/0/backendRefs/0/weight","value":95},'
        '{"op":"replace","path":"/spec/rules/0/backendRefs/1/weight","value":5}]\''
    ]


def test_single_service_break_glass_lines_cut_over_patch_the_httproute_then_the_vs():
    keys = {"router": "gateway-api", "istio": {"gateways": ["istio-system/public"]}}
    before, after = single(20, **keys), single(0, **keys)
    assert break_glass_lines(Fleet.of(before), Fleet.of(after), "prod") == [
        "  kubectl -n inference patch httproutes.gateway.networking.k8s.io inference-route"
        ' --type json -p \'[{"op":"test","path":"/spec/rules/2/backendRefs/0/name",'
        '"value":"inference-service-nvidia"},'
        '{"op":"test","path":"/spec/rules/2/backendRefs/1/name",'
        '"value":"inference-service-ascend"},'
        '{"op":"replace","path":"/spec/rules/2/backendRefs/0/weight","value":100},'
        '{"op":"replace","path":"/spec/rules/2/backendRefs/1/weight","value":0}]\'',
        "  kubectl -n inference patch virtualservices.networking.istio.io inference-vs"
        ' --type json -p \'[{"op":"test","path":"/spec/http/2/route/0/destination/subset",'
        '"value":"nvidia"},'
        '{"op":"test","path":"/spec/http/2/route/1/destination/subset","value":"ascend"},'
        '{"op":"replace","path":"/spec/http/2/route/0/weight","value":100},'
        '{"op":"replace","path":"/spec/http/2/route/1/weight","value":0}]\'',
    ]
    assert weight_targets(Fleet.of(before), Fleet.of(after), "prod") == [
        f"{PROD}{ROUTE}inference-traffic-http-route",
        f"{PROD}{VS}inference-traffic-virtual-service",
        f"{PROD}{RULES}inference-monitoring-rules",
    ]


def test_single_service_rollback_at_unchanged_weight_still_lists_its_patch():
    # A re-apply of the split as it is: no service moved, so every service is patched.
    settings = single(20)
    assert break_glass_lines(Fleet.of(settings), Fleet.of(settings), "prod") == [
        "  kubectl -n inference patch virtualservices.networking.istio.io inference-vs"
        ' --type json -p \'[{"op":"test","path":"/spec/http/2/route/0/destination/subset",'
        '"value":"nvidia"},'
        '{"op":"test","path":"/spec/http/2/route/1/destination/subset","value":"ascend"},'
        '{"op":"replace","path":"/spec/http/2/route/0/weight","value":80},'
        '{"op":"replace","path":"/spec/http/2/route/1/weight","value":20}]\''
    ]
