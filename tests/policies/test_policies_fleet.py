"""The fleet-wide checks over real renders of fleet stacks, judged with the base's facts.

Base: the example fleet (chat 50%, embedder 20%, reranker 0%; 3 NVIDIA nodes x 8 GPUs, 2
Ascend nodes x 8 NPUs). Each head below changes what the test names; the pack runs offline
with the config the base's judge writes (`pack_config`), so the per-service facts (previous
weights, verified pairs, totalReplicas) are the base's.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pulumi_policy.policy import _NotApplicableError

from components.settings.base import deep_merge
from dualstack.offline.policy_config import pack_config
from dualstack.offline.policy_run import blocking, run_policies
from dualstack.offline.render import render_fleet
from policies.pod_counts import pack
from tests.conftest import PROJECT, fleet_config
from tests.support.policy_objects import (
    ASCEND_IMAGE,
    NOT_APPLICABLE,
    NVIDIA_IMAGE,
    POLICY,
    find,
    good_stack,
    stack_args,
    stack_violations,
    urn,
)

SERVICES = f"{PROJECT}:services"


def _head(**changes: dict[str, Any]) -> dict[str, Any]:
    """The example fleet with `services.<name>` fields changed (merged key by key) and any
    stack-level key given under the name `stack`."""
    config = copy.deepcopy(fleet_config())
    for name, fields in changes.items():
        if name == "stack":
            for key, value in fields.items():
                config[f"{PROJECT}:{key}"] = deep_merge(config.get(f"{PROJECT}:{key}", {}), value)
            continue
        config[SERVICES][name] = deep_merge(config[SERVICES].get(name, {}), fields)
    return config


def _base(config: dict[str, Any]):
    return render_fleet(config, "fleet")


@pytest.fixture(scope="module")
def base():
    return _base(fleet_config())


def _judge(base, head_config: dict[str, Any], previous: dict[str, int] | None = None):
    base_fleet, base_objects = base
    head_fleet, head_objects = render_fleet(head_config, "fleet")
    weights = previous or {s.name: s.ascend_weight for s in base_fleet}
    config = pack_config(head_fleet, weights, base_fleet, base_objects, envelope=())
    results = run_policies(head_objects, config, "fleet")
    return {r.policy: r.message for r in blocking(results)}


def test_the_example_fleet_passes_every_policy(base) -> None:
    assert _judge(base, _head()) == {}


def test_two_services_raised_in_one_change_are_refused(base) -> None:
    # Both steps are one rung up to a pair the base verified: only the fleet rule refuses.
    failed = _judge(base, _head(chat={"ascendWeight": 80}, embedder={"ascendWeight": 50}))
    assert set(failed) == {"one-service-raised"}
    assert failed["one-service-raised"].startswith(
        "one change raises the Ascend share of 2 services (chat 50% -> 80%; embedder 20% -> 50%)"
    )


def test_one_raised_and_others_lowered_passes(base) -> None:
    head = _head(chat={"ascendWeight": 0}, embedder={"ascendWeight": 50})
    assert _judge(base, head) == {}


def test_a_fleet_rollback_to_zero_passes(base) -> None:
    head = _head(**{name: {"ascendWeight": 0} for name in ("chat", "embedder", "reranker")})
    assert _judge(base, head) == {}


def test_two_services_raised_from_0_to_the_smallest_share_are_refused(base) -> None:
    """0% -> 1% is a raise: the smallest step above 0 counts like any other."""
    head = _head(chat={"ascendWeight": 1}, reranker={"ascendWeight": 1})
    head[f"{PROJECT}:ladder"] = [0, 1, 5, 20, 50, 80, 100]
    failed = _judge(base, head, previous={"chat": 0, "embedder": 20, "reranker": 0})
    assert failed["one-service-raised"] == (
        "one change raises the Ascend share of 2 services (chat 0% -> 1%; reranker 0% -> 1%): "
        "raise one service per pull request, so each step is gated and rolled back on its own "
        "(lowering any number at once is fine)"
    )


def test_a_step_rule_is_each_services_own(base) -> None:
    # embedder is at 20%: 80% skips a rung. Chat going to 80 alone would be fine.
    failed = _judge(base, _head(embedder={"ascendWeight": 80}))
    assert set(failed) == {"no-unsafe-weight-jump"}
    assert failed["no-unsafe-weight-jump"].startswith(
        "service embedder: VirtualService inference-fleet/embedder-vs raises the Ascend weight "
        "from 20% to 80%"
    )


def test_an_unverified_image_of_one_service_is_refused_for_that_service(base) -> None:
    failed = _judge(base, _head(reranker={"ascendWeight": 5}))
    assert set(failed) == {"precision-verified-before-promotion"}
    assert failed["precision-verified-before-promotion"].startswith(
        "service reranker: raising the Ascend weight from 0% to 5%"
    )


def test_an_ascend_pool_overfull_across_two_services_is_refused(base) -> None:
    # Chat's and embedder's Ascend pods take 6 NPUs each (a new pod template: +1 surge pod
    # each): chat 3 + 1 and embedder 2 + 1 pods x 6 (embedder serves 20%: two pods at least),
    # with reranker's 1 x 1: 43 > 2 x 8.
    six = {"ascend": {"acceleratorsPerPod": 6}}
    failed = _judge(base, _head(chat=six, embedder=six))
    assert set(failed) == {"pool-capacity"}
    assert failed["pool-capacity"].startswith(
        "pool 'ascend' is too small: a rollout takes up to 43 huawei.com/Ascend910"
    )


def test_pods_that_fit_the_pool_total_but_no_node_are_refused() -> None:
    # The base's Ascend nodes hold 11 NPUs each (22 in all); chat's pods take 6 and it steps
    # 20% -> 50%: 3 pods of 6 (the template stays: no surge) + embedder's 2 pods and
    # reranker's 1 of 1 = 21 <= 22 in total, but a node of 11 holds one pod of 6: two, not three.
    six = {"ascend": {"acceleratorsPerPod": 6}}
    wide = {"stack": {"ascend": {"pool": {"acceleratorsPerNode": 11}}}}
    base = _base(_head(chat={"ascendWeight": 20, **six}, **wide))
    failed = _judge(base, _head(chat={"ascendWeight": 50, **six}, **wide))
    assert set(failed) == {"pool-capacity"}
    assert failed["pool-capacity"].startswith(
        "pool 'ascend' cannot place its pods node by node: a rollout takes up to 21 "
        "huawei.com/Ascend910"
    )


def test_a_fleet_whose_nvidia_pool_cannot_take_every_service_back_is_refused() -> None:
    # One NVIDIA node of 8 GPUs. Chat is at 100%: NVIDIA keeps 1 pod of its 4. Reranker grows
    # to 5 NVIDIA pods: 1 + 2 + 5 = 8 fit today, but a fleet-wide rollback puts chat's 4 back:
    # 4 + 2 + 5 = 11 > 8.
    one_node = {"stack": {"nvidia": {"pool": {"nodes": ["nvidia-01"]}}}}
    base = _base(_head(chat={"ascendWeight": 100}, **one_node))
    head = _head(
        chat={"ascendWeight": 100}, reranker={"capacity": {"totalReplicas": 5}}, **one_node
    )
    failed = _judge(base, head)
    assert set(failed) == {"fleet-rollback-capacity"}
    assert failed["fleet-rollback-capacity"].startswith(
        "pool 'nvidia' cannot hold every service at 0% at once: 11 accelerators in pods of "
    )
    assert (
        "Deployment inference-fleet/chat-blue: 4 x 1 (chat at 0%)"
        in (failed["fleet-rollback-capacity"])
    )


def test_the_same_fleet_with_room_to_go_back_passes() -> None:
    one_node = {"stack": {"nvidia": {"pool": {"nodes": ["nvidia-01"]}}}}
    base = _base(_head(chat={"ascendWeight": 100}, **one_node))
    assert _judge(base, _head(chat={"ascendWeight": 100}, **one_node)) == {}


@pytest.mark.parametrize(
    ("pods", "nodes", "per_node", "fits"),
    [
        ([6, 6], 2, 8, True),
        ([6, 6, 6], 2, 8, False),  # 18 > 16, and no node holds two
        ([5, 5, 5], 2, 8, False),  # 15 <= 16 in total, but one pod of 5 per node
        ([4, 4, 4, 4], 2, 8, True),
        ([3] * 8, 3, 8, False),  # 24 = 24 in total, two pods of 3 per node: 6
        ([1] * 24, 3, 8, True),
        ([], 0, 8, True),
        ([1, 1, 3, 3], 2, 4, True),  # largest first: 3+1 on each; smallest first strands a 3
    ],
)
def test_pack_places_each_pods_accelerators_on_one_node(pods, nodes, per_node, fits) -> None:
    assert (pack(pods, nodes, per_node) is not None) is fits


def test_pack_returns_the_free_accelerators_per_node() -> None:
    assert pack([1, 3, 2], 2, 4) == [0, 2]  # 3 then 1 on the first node, 2 on the second
    assert pack([], 2, 4) == [4, 4]


# --- over hand-built stacks: one rule broken at a time ---------------------------------------

ROLLBACK = "fleet-rollback-capacity"
RAISED = "one-service-raised"
ONE_GPU_NODE = {"nvidia": {"nodes": 1, "acceleratorsPerNode": 3}, "ascend": {"nodes": 2}}


def _at_100(nvidia_replicas: int = 1) -> list[dict[str, Any]]:
    """The hand-built stack at 100%: NVIDIA keeps `nvidia_replicas` pods of one GPU each."""
    stack = good_stack(100)
    find(stack, "Deployment", "nvidia")["spec"]["replicas"] = nvidia_replicas
    return stack


def _rollback_message(pods: int, shown: str, nodes: int, per_node: int) -> str:
    return (
        f"pool 'nvidia' cannot hold every service at 0% at once: {pods} accelerators in pods of "
        f"{shown} do not fit {nodes} nodes x {per_node} acceleratorsPerNode node by node, so a "
        "fleet-wide rollback would leave pods Pending; add nodes to the pool or lower some "
        "service's capacity.totalReplicas"
    )


def test_a_service_at_100_needs_room_for_its_total_replicas_back_on_nvidia() -> None:
    config = {"totalReplicas": 4, "poolSizes": ONE_GPU_NODE}
    assert stack_violations(ROLLBACK, _at_100(), config) == [
        _rollback_message(4, "Deployment inference/inference-blue: 4 x 1 (the service at 0%)", 1, 3)
    ]
    roomy = {"nvidia": {"nodes": 1, "acceleratorsPerNode": 4}, "ascend": {"nodes": 2}}
    assert stack_violations(ROLLBACK, _at_100(), {**config, "poolSizes": roomy}) == []


def test_a_backend_back_at_0_runs_at_least_the_serving_minimum() -> None:
    """totalReplicas 1: the program still runs 2 NVIDIA pods while NVIDIA serves."""
    one = {"nvidia": {"nodes": 1, "acceleratorsPerNode": 1}, "ascend": {"nodes": 2}}
    assert stack_violations(ROLLBACK, _at_100(), {"totalReplicas": 1, "poolSizes": one}) == [
        _rollback_message(2, "Deployment inference/inference-blue: 2 x 1 (the service at 0%)", 1, 1)
    ]


def test_more_nvidia_pods_today_than_total_replicas_count_as_they_are() -> None:
    config = {"totalReplicas": 2, "poolSizes": ONE_GPU_NODE}
    assert stack_violations(ROLLBACK, _at_100(nvidia_replicas=4), config) == [
        _rollback_message(4, "Deployment inference/inference-blue: 4 x 1 (the service at 0%)", 1, 3)
    ]


def _member(obj: dict[str, Any], app: str) -> dict[str, Any]:
    """`obj` named as service `app`'s by its own labels (its pods keep theirs)."""
    obj = copy.deepcopy(obj)
    obj["metadata"]["labels"] = {**obj["metadata"].get("labels", {}), "app": app}
    return obj


def test_each_member_with_an_nvidia_backend_is_counted_with_its_own_total_replicas() -> None:
    """A member no route serves (`aaa`, first) has no backend to bring back and counts at its
    replicas; chat, after it, comes back at its own totalReplicas, not the stack's."""
    idle = _member(find(good_stack(100), "Deployment", "nvidia"), "aaa")
    idle["metadata"]["name"] = "aaa-blue"
    stack = [idle, *(_member(obj, "chat") for obj in _at_100())]
    services = {"aaa": {}, "chat": {"totalReplicas": 4}}
    config = {"totalReplicas": 1, "poolSizes": ONE_GPU_NODE, "services": services}
    assert stack_violations(ROLLBACK, stack, config) == [
        _rollback_message(
            8,
            "Deployment inference/aaa-blue: 4 x 1; "
            "Deployment inference/inference-blue: 4 x 1 (chat at 0%)",
            1,
            3,
        )
    ]


def test_without_total_replicas_a_backend_comes_back_at_the_default_4() -> None:
    assert stack_violations(ROLLBACK, _at_100(), {"poolSizes": ONE_GPU_NODE}) == [
        _rollback_message(4, "Deployment inference/inference-blue: 4 x 1 (the service at 0%)", 1, 3)
    ]


@pytest.mark.parametrize("raw", [0, -2, "four", 2.5])
def test_total_replicas_that_is_no_positive_integer_fails_closed(raw) -> None:
    shown = repr(float(raw) if isinstance(raw, int) else raw)  # the engine sends numbers as floats
    assert stack_violations(ROLLBACK, _at_100(), {"totalReplicas": raw}) == [
        f"policy config totalReplicas = {shown} is not a positive integer; regenerate it with "
        "`dualstack policy-config`"
    ]


def not_applicable_reason(policy: str, objects: list[dict[str, Any]], config=None) -> str:
    """The reason a policy gives for not applying (the policy report shows it)."""
    with pytest.raises(_NotApplicableError) as raised:
        POLICY[policy].validate(stack_args(objects, config), lambda *_args: None)
    return raised.value.reason


def test_no_route_to_an_nvidia_backend_is_not_applicable_for_the_rollback() -> None:
    stack = [obj for obj in _at_100() if obj["kind"] != "VirtualService"]
    assert stack_violations(ROLLBACK, stack, {}) == NOT_APPLICABLE
    assert not_applicable_reason(ROLLBACK, stack, {}) == (
        "no route sends traffic to an NVIDIA backend"
    )


def test_a_workload_whose_pods_cannot_be_counted_is_named() -> None:
    """The violation names the workload and is attached to it (its URN)."""
    stack = _at_100(nvidia_replicas="many")
    found: list[tuple[str, str | None]] = []
    POLICY[ROLLBACK].validate(stack_args(stack, {}), lambda *report: found.append(report))
    assert found == [
        (
            "cannot count Deployment inference/inference-blue: spec.replicas is 'many', not a "
            "whole number",
            urn(find(stack, "Deployment", "nvidia")),
        )
    ]


def test_one_service_is_not_judged_for_raises_across_services() -> None:
    assert not_applicable_reason(RAISED, good_stack(100), {}) == "one service"


def _two_services() -> list[dict[str, Any]]:
    """aaa: one NVIDIA Deployment no route serves; chat: the hand-built stack at 100%."""
    idle = _member(find(good_stack(100), "Deployment", "nvidia"), "aaa")
    idle["metadata"]["name"] = "aaa-blue"
    return [idle, *(_member(obj, "chat") for obj in _at_100())]


def test_a_previous_weight_beyond_100_fails_closed() -> None:
    services = {"aaa": {}, "chat": {"previousWeight": 101}}
    assert stack_violations(RAISED, _two_services(), {"services": services}) == [
        "policy config previousWeight = 101.0 is not an integer 0..100; regenerate it with "
        "`dualstack policy-config`"
    ]
    services["chat"]["previousWeight"] = 100
    assert stack_violations(RAISED, _two_services(), {"services": services}) == []


def test_a_daemonset_on_the_nvidia_pool_takes_a_pod_on_every_node() -> None:
    """A DaemonSet runs one pod per node of its pool: 2 nodes, 2 of its pods beside the
    backend's 4 at 0%."""
    agent = copy.deepcopy(find(good_stack(100), "Deployment", "nvidia"))
    agent["kind"], agent["metadata"]["name"] = "DaemonSet", "gpu-agent"
    del agent["spec"]["replicas"]
    agent["metadata"]["labels"] = agent["spec"]["template"]["metadata"]["labels"] = {"app": "agent"}
    agent["spec"]["selector"] = {"matchLabels": {"app": "agent"}}
    two_nodes = {"nvidia": {"nodes": 2, "acceleratorsPerNode": 2}, "ascend": {"nodes": 2}}
    config = {"totalReplicas": 4, "poolSizes": two_nodes}
    assert stack_violations(ROLLBACK, [*_at_100(), agent], config) == [
        _rollback_message(
            6,
            "Deployment inference/inference-blue: 4 x 1 (the service at 0%); "
            "DaemonSet inference/gpu-agent: 2 x 1",
            2,
            2,
        )
    ]


# a fleet of one (issue 28) ------------------------------------------------------------------


def _one_service(name: str, weight: str) -> dict[str, Any]:
    """A stack declaring `services: {name: ...}` at `weight`, the v1.2.3 pair verified."""
    verified = [{"nvidia": NVIDIA_IMAGE, "ascend": ASCEND_IMAGE}]
    return {SERVICES: {name: {"ascendWeight": weight, "verifiedImages": verified}}}


@pytest.mark.parametrize("name", ["inference-service", "chat"])
def test_a_fleet_of_one_conversion_keeps_the_base_s_weight_and_record(name) -> None:
    """A stack without `services` becoming `services: {name: ...}` at the same weight: the
    base's one service is the head's, with its weight (not a raise from 0) and its images."""
    verified = [{"nvidia": NVIDIA_IMAGE, "ascend": ASCEND_IMAGE}]
    base = render_fleet(
        {f"{PROJECT}:ascendWeight": "50", f"{PROJECT}:verifiedImages": verified}, "prod"
    )
    head_fleet, head_objects = render_fleet(_one_service(name, "50"), "prod")
    config = pack_config(head_fleet, base[0].weights, *base, envelope=())
    member = config["no-unsafe-weight-jump"]["services"][name]
    assert member["previousWeight"] == 50
    assert config["precision-verified-before-promotion"]["services"][name]["previousImages"] == {
        "nvidia": NVIDIA_IMAGE,
        "ascend": ASCEND_IMAGE,
    }
    assert {r.policy: r.message for r in blocking(run_policies(head_objects, config))} == {}
    # and back: a fleet of one becoming a stack without `services`
    back = {f"{PROJECT}:ascendWeight": "50", f"{PROJECT}:verifiedImages": verified}
    single_fleet, single_objects = render_fleet(back, "prod")
    base_fleet, base_objects = render_fleet(_one_service(name, "50"), "prod")
    config = pack_config(single_fleet, {name: 50}, base_fleet, base_objects, envelope=())
    assert {r.policy: r.message for r in blocking(run_policies(single_objects, config))} == {}


def test_a_fleet_of_one_raised_in_the_conversion_is_still_a_raise() -> None:
    verified = [{"nvidia": NVIDIA_IMAGE, "ascend": ASCEND_IMAGE}]
    base = render_fleet(
        {f"{PROJECT}:ascendWeight": "20", f"{PROJECT}:verifiedImages": verified}, "prod"
    )
    head_fleet, head_objects = render_fleet(_one_service("chat", "80"), "prod")
    config = pack_config(head_fleet, base[0].weights, *base, envelope=())
    found = {r.policy: r.message for r in blocking(run_policies(head_objects, config))}
    assert "raises the Ascend weight from 20% to 80%" in found["no-unsafe-weight-jump"]
