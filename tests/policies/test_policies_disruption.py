"""serving-disruption-budget: a node drain never leaves a serving subset without a ready pod.

Over the program's own renders (the article's stack at every rung, the example fleet) and
over hand-built stacks that break one part of the guarantee at a time.
"""

from __future__ import annotations

import pytest
from pulumi_policy.policy import _NotApplicableError

from components.capacity import MIN_SERVING_REPLICAS as PROGRAM_MINIMUM
from dualstack.offline.policy_config import pack_config
from dualstack.offline.policy_run import run_policies
from dualstack.offline.render import render_fleet
from policies import POLICIES as PACK
from policies.disruption import MIN_SERVING_REPLICAS, Budget
from tests.conftest import cfg, find, fleet_config
from tests.support.pack_config import single_pack_config
from tests.support.policy_objects import (
    NOT_APPLICABLE,
    NVIDIA_IMAGE,
    deployment,
    good_stack,
    route_object,
    stack_args,
    stack_reports,
    stack_violations,
    with_pins,
    with_route,
)
from tests.support.policy_objects import POLICY as POLICIES
from tests.support.policy_objects import find as find_hand_built

POLICY = "serving-disruption-budget"
POLICY_DESCRIPTION = next(p.description for p in PACK if p.name == POLICY)


def budget(hardware: str, **spec) -> dict:
    """A PodDisruptionBudget selecting one backend's pods (the program's selector)."""
    version = "blue" if hardware == "nvidia" else "green"
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"inference-{version}-pdb", "namespace": "inference"},
        "spec": {
            "selector": {"matchLabels": {"app": "inference-service", "version": version}},
            **spec,
        },
    }


def guarded(weight: int, ascend_replicas: int) -> list[dict]:
    """`good_stack`: both backends' budgets are the program's, `maxUnavailable: 1`."""
    return good_stack(weight, ascend_replicas)


def with_ascend_budget(**spec) -> list[dict]:
    """The stack at 20% with two Ascend pods and Ascend's budget replaced by one of `spec`."""
    stack = [o for o in good_stack(20, 2) if o["metadata"]["name"] != "inference-green-pdb"]
    return [*stack, budget("ascend", **spec)]


def test_the_pack_and_the_program_agree_on_the_minimum() -> None:
    assert MIN_SERVING_REPLICAS == PROGRAM_MINIMUM == 2


@pytest.mark.parametrize("weight", [0, 5, 20, 50, 80, 100])
def test_the_article_stack_keeps_a_ready_pod_at_every_rung(weight: int) -> None:
    settings, objects = render_fleet(cfg(ascendWeight=str(weight)), "prod")
    green = find(objects, "Deployment", "inference-green")
    blue = find(objects, "Deployment", "inference-blue")
    assert green["spec"]["replicas"] == {0: 1, 5: 2, 20: 2, 50: 3, 80: 4, 100: 5}[weight]
    assert blue["spec"]["replicas"] == (1 if weight == 100 else 4)
    assert (
        find(objects, "PodDisruptionBudget", "inference-green-pdb")["spec"]["maxUnavailable"] == 1
    )
    config = single_pack_config(settings.first, weight, settings.first, objects, envelope=())
    result = next(r for r in run_policies(objects, config, "prod") if r.policy == POLICY)
    assert (result.outcome, result.message) == ("pass", POLICY_DESCRIPTION)  # what held


def test_the_example_fleet_keeps_a_ready_pod_in_every_serving_subset() -> None:
    fleet, objects = render_fleet(fleet_config(), "fleet")
    replicas = {
        o["metadata"]["name"]: o["spec"]["replicas"] for o in objects if o["kind"] == "Deployment"
    }
    assert replicas == {
        "chat-blue": 4,
        "chat-green": 3,
        "embedder-blue": 2,
        "embedder-green": 2,  # 20% of 2 x 1.2 = 0.48 pods: 2 while it serves
        "reranker-blue": 2,
        "reranker-green": 1,  # 0%: no traffic, one warm pod
    }
    weights = {s.name: s.ascend_weight for s in fleet}
    config = pack_config(fleet, weights, fleet, objects, envelope=())
    result = next(r for r in run_policies(objects, config, "fleet") if r.policy == POLICY)
    assert result.outcome == "pass"


def test_one_serving_ascend_pod_is_refused() -> None:
    assert stack_violations(POLICY, guarded(5, 1)) == [
        "Deployment inference/inference-green takes traffic (VirtualService "
        "inference/inference-vs route 'split' sends it 5%) with 1 replica: a node drain "
        "evicts it and the subset has no ready pod (503) until a new one has loaded its "
        "model; run at least 2 replicas while it serves"
    ]


def test_one_idle_pod_is_fine() -> None:
    assert stack_violations(POLICY, guarded(0, 1)) == []


def test_a_serving_deployment_without_a_budget_is_refused() -> None:
    stack = [o for o in good_stack(20, 2) if o["metadata"]["name"] != "inference-green-pdb"]
    assert stack_violations(POLICY, stack) == [
        "Deployment inference/inference-green takes traffic (VirtualService "
        "inference/inference-vs route 'split' sends it 20%) but no PodDisruptionBudget (with "
        "matchLabels) selects its pods: a node drain may evict every pod at once and leave the "
        "subset without a ready pod (503); add a PodDisruptionBudget selecting its pods with "
        "maxUnavailable: 1 (or minAvailable: 1)"
    ]


@pytest.mark.parametrize(
    ("spec", "kept"),
    [
        ({"maxUnavailable": 2}, 0),
        ({"maxUnavailable": "100%"}, 0),
        ({"minAvailable": 0}, 0),
        ({"minAvailable": "0%"}, 0),
    ],
)
def test_a_budget_that_lets_every_pod_go_is_refused(spec: dict, kept: int) -> None:
    (message,) = stack_violations(POLICY, with_ascend_budget(**spec))
    assert (
        f"PodDisruptionBudget inference/inference-green-pdb keeps {kept} of its 2 pods" in message
    )


@pytest.mark.parametrize(
    "spec", [{"maxUnavailable": 1}, {"maxUnavailable": "50%"}, {"minAvailable": 1}]
)
def test_a_budget_that_keeps_one_of_two_passes(spec: dict) -> None:
    assert stack_violations(POLICY, with_ascend_budget(**spec)) == []


def test_a_budget_in_another_namespace_does_not_count() -> None:
    stack = guarded(20, 2)
    assert stack[-1]["metadata"]["name"] == "inference-green-pdb"
    stack[-1]["metadata"]["namespace"] = "elsewhere"
    (message,) = stack_violations(POLICY, stack)
    assert "Deployment inference/inference-green takes traffic" in message


def test_nvidia_at_100_takes_no_traffic_and_may_run_one_pod() -> None:
    stack = guarded(100, 5)
    find_hand_built(stack, "Deployment", "nvidia")["spec"]["replicas"] = 1
    assert stack_violations(POLICY, stack) == []


def test_nothing_routed_is_not_applicable() -> None:
    assert stack_violations(POLICY, [deployment("nvidia", 1, NVIDIA_IMAGE)]) == NOT_APPLICABLE
    with pytest.raises(_NotApplicableError) as raised:  # the reason the policy report shows
        POLICIES[POLICY].validate(stack_args([deployment("nvidia", 1, NVIDIA_IMAGE)]), print)
    assert raised.value.reason == "no Deployment takes traffic"


@pytest.mark.parametrize(
    ("min_available", "max_unavailable", "pods", "kept"),
    [
        (None, 1, 2, 1),
        (None, "50%", 3, 1),
        ("50%", None, 3, 2),
        (1, None, 4, 1),
        (None, None, 2, 0),
        ("1%", None, 101, 2),  # 1.01 pods, rounded up
        (None, "1%", 101, 99),  # 2 may go
    ],
)
def test_what_a_budget_keeps(min_available, max_unavailable, pods, kept) -> None:
    """Percentages are of the replicas, rounded up (the disruption controller's rule)."""
    rule = Budget("PodDisruptionBudget x", "inference", {}, min_available, max_unavailable)
    assert rule.kept(pods) == kept


@pytest.mark.parametrize("router", ["istio", "gateway-api"])
def test_a_tester_pin_makes_no_pod_serving(router: str) -> None:
    """At 0% the one warm Ascend pod is reached only by the pin header: a drain fails a
    tester's request, not a user's."""
    stack = with_route(good_stack(0, 1, router), with_pins(route_object(router, 0), router))
    assert stack_violations(POLICY, stack) == []


def test_a_pin_on_another_header_than_the_configured_one_serves() -> None:
    """The pin header comes from config `testerPinning` (the base's): a rule matching another
    header is an ordinary route, and its pod takes traffic."""
    stack = with_route(good_stack(0, 1), with_pins(route_object("istio", 0), "istio"))
    config = {
        "testerPinning": {"header": "x-dualstack-canary", "nvidia": "nvidia", "ascend": "ascend"}
    }
    assert stack_violations(POLICY, stack, config) == [
        "Deployment inference/inference-green takes traffic (VirtualService "
        "inference/inference-vs route 'pin-ascend' sends it 100%) with 1 replica: a node drain "
        "evicts it and the subset has no ready pod (503) until a new one has loaded its "
        "model; run at least 2 replicas while it serves"
    ]


def test_one_serving_ascend_pod_behind_an_http_route_is_refused() -> None:
    assert stack_violations(POLICY, good_stack(5, 1, "gateway-api")) == [
        "Deployment inference/inference-green takes traffic (HTTPRoute "
        "inference/inference-route route 'split' sends it 5%) with 1 replica: a node drain "
        "evicts it and the subset has no ready pod (503) until a new one has loaded its "
        "model; run at least 2 replicas while it serves"
    ]


def test_the_example_fleet_under_gateway_api_keeps_a_ready_pod_and_names_each_route() -> None:
    config = {**fleet_config(), **cfg(router="gateway-api")}
    fleet, objects = render_fleet(config, "fleet")
    routes = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "HTTPRoute")
    assert routes == ["chat-route", "embedder-route", "reranker-route"]
    assert [o for o in objects if o["kind"] == "VirtualService"] == []
    weights = {s.name: s.ascend_weight for s in fleet}
    config = pack_config(fleet, weights, fleet, objects, envelope=())
    results = {r.policy: r for r in run_policies(objects, config, "fleet")}
    assert (results[POLICY].outcome, results[POLICY].message) == ("pass", POLICY_DESCRIPTION)
    failed = sorted(p for p, r in results.items() if r.outcome == "fail")
    assert failed == []


@pytest.mark.parametrize(
    "spec",
    [
        {"maxUnavailable": "one"},
        {"maxUnavailable": "%"},
        {"maxUnavailable": "1.5%"},
        {"minAvailable": "\uff15\uff10%"},  # fullwidth "50": no integer Kubernetes reads
        {"minAvailable": -1},
        {"maxUnavailable": True},
    ],
)
def test_a_budget_limit_that_is_no_number_keeps_an_unreadable_number(spec: dict) -> None:
    """A limit the disruption controller could not read is no guarantee (fail closed)."""
    (message,) = stack_violations(POLICY, with_ascend_budget(**spec))
    assert (
        "PodDisruptionBudget inference/inference-green-pdb keeps an unreadable number of its 2 "
        "pods available: a node drain may evict every pod at once"
    ) in message


def test_a_budget_selecting_by_expressions_is_not_read() -> None:
    stack = with_ascend_budget(maxUnavailable=1)
    selector = stack[-1]["spec"]["selector"]
    selector["matchExpressions"] = [{"key": "version", "operator": "In", "values": ["green"]}]
    (message,) = stack_violations(POLICY, stack)
    assert "but no PodDisruptionBudget (with matchLabels) selects its pods" in message


def test_one_budget_keeping_a_pod_is_enough_and_every_one_is_named_otherwise() -> None:
    other = {"name": "b", "namespace": "inference"}
    kept_one = [
        *with_ascend_budget(maxUnavailable=2),
        {**budget("ascend", minAvailable=1), "metadata": other},
    ]
    assert stack_violations(POLICY, kept_one) == []
    none_kept = [
        *with_ascend_budget(maxUnavailable=2),
        {**budget("ascend", minAvailable="0%"), "metadata": other},
    ]
    (message,) = stack_violations(POLICY, none_kept)
    assert (
        "but PodDisruptionBudget inference/inference-green-pdb keeps 0 of its 2 pods available; "
        "PodDisruptionBudget inference/b keeps 0 of its 2 pods available: a node drain"
    ) in message


def test_a_route_with_unreadable_weights_serves_an_unknown_share() -> None:
    """Weights that are no numbers may send the pod anything: it serves (fail closed)."""
    stack = with_route(guarded(5, 1), route_object("istio", "five", "ninety-five"))
    (message,) = stack_violations(POLICY, stack)
    assert message.startswith(
        "Deployment inference/inference-green takes traffic (VirtualService "
        "inference/inference-vs route 'split' sends it an unknown share) with 1 replica"
    )


def _in_default_namespace(value):
    """A hand-built object with no `metadata.namespace` anywhere: Kubernetes puts it in
    `default` (and its hosts name `default`)."""
    if isinstance(value, dict):
        return {
            key: _in_default_namespace(inner)
            for key, inner in value.items()
            if not (key == "namespace" and inner == "inference")
        }
    if isinstance(value, list):
        return [_in_default_namespace(inner) for inner in value]
    if isinstance(value, str):
        return value.replace(".inference.svc", ".default.svc")
    return value


def test_a_budget_without_a_namespace_guards_workloads_without_one() -> None:
    """Both sit in `default`: the budget counts (and without it, the drain is refused)."""
    stack = [_in_default_namespace(obj) for obj in good_stack(20, 2)]
    assert all("namespace" not in obj["metadata"] for obj in stack)
    assert stack_violations(POLICY, stack) == []
    unguarded = [obj for obj in stack if obj["metadata"]["name"] != "inference-green-pdb"]
    (message,) = stack_violations(POLICY, unguarded)
    assert message.startswith(
        "Deployment inference-green takes traffic (VirtualService inference-vs route 'split' "
        "sends it 20%) but no PodDisruptionBudget (with matchLabels) selects its pods"
    )


def test_one_pod_serving_the_smallest_share_is_refused() -> None:
    """1% is traffic: a drain of its one pod fails 1% of the requests."""
    (message,) = stack_violations(POLICY, guarded(1, 1))
    assert message.startswith(
        "Deployment inference/inference-green takes traffic (VirtualService "
        "inference/inference-vs route 'split' sends it 1%) with 1 replica"
    )


def test_unreadable_replicas_of_one_backend_hide_nothing_of_the_other() -> None:
    """NVIDIA's replicas are no number (rollback-capacity reports that); Ascend's one serving
    pod is still refused."""
    stack = guarded(20, 1)
    find_hand_built(stack, "Deployment", "nvidia")["spec"]["replicas"] = "many"
    (message,) = stack_violations(POLICY, stack)
    assert message.startswith("Deployment inference/inference-green takes traffic")


def test_each_refusal_is_reported_on_its_workload_and_one_pod_hides_no_other() -> None:
    """NVIDIA serves 80% with one pod and Ascend 20% without a budget: both are refused, each
    on its own Deployment, the one-pod refusal first (route order) and not the last judged."""
    stack = [o for o in good_stack(20, 2) if o["metadata"]["name"] != "inference-green-pdb"]
    find_hand_built(stack, "Deployment", "nvidia")["spec"]["replicas"] = 1
    assert stack_reports(POLICY, stack) == [
        (
            "Deployment inference/inference-blue takes traffic (VirtualService "
            "inference/inference-vs route 'split' sends it 80%) with 1 replica: a node drain "
            "evicts it and the subset has no ready pod (503) until a new one has loaded its "
            "model; run at least 2 replicas while it serves",
            "urn:pulumi:test::dualstack-inference::kubernetes:apps/v1:Deployment::inference-blue",
        ),
        (
            "Deployment inference/inference-green takes traffic (VirtualService "
            "inference/inference-vs route 'split' sends it 20%) but no PodDisruptionBudget (with "
            "matchLabels) selects its pods: a node drain may evict every pod at once and leave "
            "the subset without a ready pod (503); add a PodDisruptionBudget selecting its pods "
            "with maxUnavailable: 1 (or minAvailable: 1)",
            "urn:pulumi:test::dualstack-inference::kubernetes:apps/v1:Deployment::inference-green",
        ),
    ]
