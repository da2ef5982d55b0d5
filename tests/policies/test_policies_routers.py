"""Every policy that reads routes judges both routers alike; tester pins are the one exception,
recognised precisely; mirrors serve no traffic; HTTPRoute rules are valid splits.

Hand-built stacks (`tests.support.policy_objects`) under `istio` (VirtualService +
DestinationRule) and `gateway-api` (HTTPRoute to the direct Services), and the program's own
render of both routers at every rung.
"""

from __future__ import annotations

import copy

import pytest

from dualstack.offline.policy_run import run_policies
from tests.conftest import cfg
from tests.support.policy_objects import (
    ASCEND_IMAGE,
    HOST,
    JUDGED,
    NVIDIA_IMAGE,
    PIN_HEADER,
    ROUTE_OBJECT,
    ROUTERS,
    backend_ref,
    find,
    good_stack,
    pin_rule,
    route_object,
    rules_of,
    stack_violations,
    with_pins,
    with_route,
)

TRAFFIC_POLICIES = (
    "ascend-weight-on-ladder",
    "no-unsafe-weight-jump",
    "route-weights-valid",
    "rollback-capacity",
    "precision-verified-before-promotion",
    "safety-envelope-unchanged",
)


@pytest.fixture(params=ROUTERS)
def router(request) -> str:
    return request.param


def judged(objects, previous: int | None, **config) -> dict[str, list[str]]:
    """{policy: messages} of the traffic policies, each with what a judge writes for a plain
    step off a base that verified the v1.2.3 pair (`JUDGED`), `previousWeight` (and
    `previousAscendImage` = the verified image) plus `config`."""
    found = {}
    for policy in TRAFFIC_POLICIES:
        keys = JUDGED.get(policy, {}) | config
        if previous is not None:
            keys |= {"previousWeight": previous, "previousAscendImage": ASCEND_IMAGE}
        result = stack_violations(policy, objects, keys)
        found[policy] = result if isinstance(result, list) else []
    return {policy: messages for policy, messages in found.items() if messages}


def stack(router: str, weight: int, **kwargs):
    return good_stack(weight, router=router, **kwargs)


# --- the same unsafe steps are refused under both routers --------------------------------


def test_every_rung_with_its_pins_passes_every_traffic_policy(router):
    for previous, weight in [(0, 0), (0, 5), (5, 20), (20, 50), (50, 80), (80, 100)]:
        objects = stack(router, weight)
        with_pins(find(objects, "VirtualService" if router == "istio" else "HTTPRoute"), router)
        assert judged(objects, previous) == {}, (previous, weight)


def test_skipping_rungs_is_refused(router):
    found = judged(stack(router, 80), 5)
    assert set(found) == {"no-unsafe-weight-jump"}
    assert found["no-unsafe-weight-jump"][0].startswith(
        f"{ROUTE_OBJECT[router]} raises the Ascend weight from 5% to 80%"
    )


def test_nvidia_shrunk_below_all_traffic_is_refused(router):
    objects = stack(router, 20)
    find(objects, "Deployment", "nvidia")["spec"]["replicas"] = 2
    assert set(judged(objects, 5)) == {"rollback-capacity"}


def test_ascend_short_of_pods_for_its_share_is_refused(router):
    assert set(judged(stack(router, 50, ascend_replicas=1), 20)) == {"rollback-capacity"}


UNVERIFIED = {"verifiedImages": [{"nvidia": NVIDIA_IMAGE, "ascend": "registry/x:v1.2.2-npu"}]}
"""A base whose record verifies another Ascend image than the served one."""


def test_raising_with_an_unverified_image_is_refused(router):
    found = judged(stack(router, 20), 5, **UNVERIFIED)
    assert set(found) == {"precision-verified-before-promotion"}
    [message] = found["precision-verified-before-promotion"]
    assert f"Deployment inference/inference-green serves {NVIDIA_IMAGE} + {ASCEND_IMAGE}" in message


def test_a_catch_all_rule_to_ascend_ahead_of_the_split_is_refused(router):
    objects = stack(router, 5)
    route = find(objects, "VirtualService" if router == "istio" else "HTTPRoute")
    if router == "istio":
        catch_all = {"name": "all", "route": [{"destination": {"host": HOST, "subset": "ascend"}}]}
    else:
        catch_all = {"name": "all", "backendRefs": [backend_ref("ascend")]}
    rules_of(route).insert(0, catch_all)
    found = judged(objects, 5)
    assert {"no-unsafe-weight-jump", "rollback-capacity"} <= set(found)
    assert "from 5% to 100%" in found["no-unsafe-weight-jump"][0]


# --- tester pins ------------------------------------------------------------------------------


def pinned(router: str, weight: int, pin: dict | None = None):
    """The clean stack at `weight` with the Ascend pin (or `pin`) ahead of the split."""
    objects = stack(router, weight)
    route = find(objects, "VirtualService" if router == "istio" else "HTTPRoute")
    rules_of(route).insert(0, pin if pin is not None else pin_rule(router, "ascend"))
    return objects


def test_the_ascend_pin_is_left_out_of_the_share(router):
    """At 5% the pin sends its testers' requests 100% to Ascend; the share stays 5%, Ascend
    needs no pods for 100%, the unverified image at weight 0 stays allowed."""
    assert judged(pinned(router, 5), 5) == {}
    assert judged(pinned(router, 0), 0, **UNVERIFIED) == {}


def test_an_approved_pin_on_a_header_clients_send_pins_nothing(router):
    """Issue 28: whatever the approval, a pin header outside the project's `x-dualstack-`
    headers is refused (an SDK's `x-stainless-lang` would route real traffic around the
    split): every share policy fails closed on the config, naming the key."""
    custom = {"header": "x-stainless-lang", "nvidia": "gpu", "ascend": "python"}
    pin = pin_rule(router, "ascend", value="python")
    if router == "istio":
        pin["match"] = [{"headers": {"x-stainless-lang": {"exact": "python"}}}]
    else:
        pin["matches"][0]["headers"][0]["name"] = "x-stainless-lang"
    found = judged(pinned(router, 5, pin), 5, testerPinning=custom, ownerApproved=True)
    assert found
    for messages in found.values():
        assert any(
            message.startswith(
                "policy config testerPinning.header = 'x-stainless-lang' is not a project "
                "header: a pin header starts with x-dualstack- (e.g. x-dualstack-hardware)"
            )
            for message in messages
        ), messages


def test_the_pin_header_and_values_come_from_policy_config(router):
    custom = {"header": "x-dualstack-team-pin", "nvidia": "gpu", "ascend": "npu"}
    pin = pin_rule(router, "ascend", value="npu")
    if router == "istio":
        pin["match"] = [{"headers": {"x-dualstack-team-pin": {"exact": "npu"}}}]
    else:
        pin["matches"][0]["headers"][0]["name"] = "X-Dualstack-Team-Pin"  # case-insensitive
    assert judged(pinned(router, 5, pin), 5, testerPinning=custom) == {}
    # The default header no longer pins: the rule is judged as the 100% route it is.
    assert "no-unsafe-weight-jump" in judged(pinned(router, 5), 5, testerPinning=custom)


def _almost_pins(router: str) -> dict[str, dict]:
    """Rules shaped nearly like the Ascend pin, each one way off."""
    base = pin_rule(router, "ascend")
    cases = {}
    wrong_value = copy.deepcopy(base)
    wrong_header = copy.deepcopy(base)
    extra_condition = copy.deepcopy(base)
    to_nvidia = copy.deepcopy(base)
    regex = copy.deepcopy(base)
    if router == "istio":
        wrong_value["match"][0]["headers"][PIN_HEADER]["exact"] = "nvidia-please"
        wrong_header["match"][0]["headers"] = {"x-other": {"exact": "ascend"}}
        extra_condition["match"][0]["uri"] = {"prefix": "/"}
        to_nvidia["route"][0]["destination"]["subset"] = "nvidia"
        to_nvidia["match"][0]["headers"][PIN_HEADER]["exact"] = "ascend"
        regex["match"][0]["headers"][PIN_HEADER] = {"regex": ".*"}
        mirrored = copy.deepcopy(base) | {"mirror": {"host": HOST, "subset": "ascend"}}
        two_matches = copy.deepcopy(base)
        two_matches["match"].append({"uri": {"prefix": "/"}})
    else:
        header = wrong_value["matches"][0]["headers"][0]
        header["value"] = "nvidia-please"
        wrong_header["matches"][0]["headers"][0]["name"] = "x-other"
        extra_condition["matches"][0]["method"] = "GET"
        to_nvidia["backendRefs"] = [backend_ref("nvidia")]
        regex["matches"][0]["headers"][0] |= {"type": "RegularExpression", "value": ".*"}
        mirrored = copy.deepcopy(base)
        mirrored["filters"] = [
            {"type": "RequestMirror", "requestMirror": {"backendRef": backend_ref("nvidia")}}
        ]
        two_matches = copy.deepcopy(base)
        two_matches["matches"].append({"path": {"type": "PathPrefix", "value": "/"}})
    cases |= {
        "wrong value": wrong_value,
        "another header": wrong_header,
        "an extra condition": extra_condition,
        "a second match (an OR: every request)": two_matches,
        "a regex": regex,
        "a mirror on it": mirrored,
    }
    return cases


@pytest.mark.parametrize(
    "case",
    [
        "wrong value",
        "another header",
        "an extra condition",
        "a second match (an OR: every request)",
        "a regex",
        "a mirror on it",
    ],
)
def test_a_rule_that_is_almost_a_pin_is_judged_as_a_route(router, case):
    found = judged(pinned(router, 5, _almost_pins(router)[case]), 5)
    assert "no-unsafe-weight-jump" in found, case
    assert any("from 5% to 100%" in m for m in found["no-unsafe-weight-jump"])


def test_a_pin_shaped_tcp_route_is_judged_as_a_route():
    """Only an `http` entry can match a header: Istio's TCP match has no `headers` (the API
    server prunes the field), so a pin-shaped `tcp` entry sends all its traffic to Ascend."""
    objects = stack("istio", 5)
    vs = find(objects, "VirtualService")
    vs["spec"]["tcp"] = [pin_rule("istio", "ascend")]
    found = judged(objects, 5)
    assert any(
        m.startswith(
            "VirtualService inference/inference-vs raises the Ascend weight from 5% to 100%"
        )
        and "route 'pin-ascend'" in m
        for m in found["no-unsafe-weight-jump"]
    )


def test_the_ascend_value_routed_to_nvidia_is_no_pin(router):
    """The NVIDIA pin is an NVIDIA route; one carrying the Ascend value but reaching NVIDIA is
    judged: it sends nothing to Ascend, so it passes the share, and it is no exception."""
    pin = pin_rule(router, "nvidia", value="ascend")
    objects = pinned(router, 5, pin)
    assert judged(objects, 5) == {}  # 0% to Ascend: nothing unsafe either way
    ascend_pin_to_both = pin_rule(router, "ascend")
    if router == "istio":
        ascend_pin_to_both["route"] = [
            {"destination": {"host": HOST, "subset": "ascend"}, "weight": 50},
            {"destination": {"host": HOST, "subset": "nvidia"}, "weight": 50},
        ]
    else:
        ascend_pin_to_both["backendRefs"] = [
            backend_ref("ascend", 50),
            backend_ref("nvidia", 50),
        ]
    found = judged(pinned(router, 5, ascend_pin_to_both), 5)
    assert any("from 5% to 50%" in m for m in found["no-unsafe-weight-jump"])


def test_a_malformed_pin_config_fails_closed(router):
    found = judged(
        pinned(router, 5), 5, testerPinning={"header": PIN_HEADER, "nvidia": "x", "ascend": "x"}
    )
    assert found["no-unsafe-weight-jump"] == [
        "policy config testerPinning: nvidia and ascend are both 'x'; regenerate it with "
        "`dualstack policy-config`"
    ]


# --- mirrors serve no traffic -----------------------------------------------------------------


def mirrored(router: str, percent: int = 10):
    objects = stack(router, 0)
    route = find(objects, "VirtualService" if router == "istio" else "HTTPRoute")
    split = rules_of(route)[-1]
    if router == "istio":
        split["mirror"] = {"host": HOST, "subset": "ascend"}
        split["mirrorPercentage"] = {"value": percent}
    else:
        mirror = {"backendRef": backend_ref("ascend"), "percent": percent}
        split["filters"] = [{"type": "RequestMirror", "requestMirror": mirror}]
    return objects


def test_a_mirror_at_weight_0_is_no_served_traffic(router):
    """The shadow rung: 10% copied to Ascend, whose image need not be verified yet."""
    assert judged(mirrored(router), 0, **UNVERIFIED) == {}


# --- HTTPRoute rules are valid splits ---------------------------------------------------------


def http_rules(weights: list[tuple[str, object]]):
    route = route_object("gateway-api", 5)
    route["spec"]["rules"][0]["backendRefs"] = [backend_ref(hw, w) for hw, w in weights]
    return with_route(good_stack(5, router="gateway-api"), route)


def routes_valid(objects):
    return stack_violations("route-weights-valid", objects)


def test_httproute_weights_are_proportions_not_percent():
    assert routes_valid(http_rules([("nvidia", 19), ("ascend", 1)])) == []
    assert routes_valid(http_rules([("nvidia", 950_000), ("ascend", 50_000)])) == []


def test_an_all_zero_httproute_rule_is_refused():
    [message] = routes_valid(http_rules([("nvidia", 0), ("ascend", 0)]))
    assert message.startswith("HTTPRoute inference/inference-route rule 'split': every backendRef")
    assert "has weight 0" in message


def test_an_httproute_split_without_the_idle_backend_is_refused():
    """Dropping Ascend's `weight: 0` backendRef: a split naming one backend (the default
    weight of a bare backendRef is 1, never 0)."""
    found = routes_valid(http_rules([("nvidia", 100), ("nvidia", 0)]))
    assert found == [
        "HTTPRoute inference/inference-route rule 'split': weights "
        "inference-service-nvidia.inference.svc.cluster.local=100, "
        "inference-service-nvidia.inference.svc.cluster.local=0 name no backend of Ascend; "
        "list both backends' Services in the split, the idle one with an explicit `weight: 0`"
    ]


@pytest.mark.parametrize("bad", [-1, 1_000_001, "5", 2.5])
def test_httproute_weights_outside_int32_proportions_are_refused(bad):
    [message] = routes_valid(http_rules([("nvidia", 95), ("ascend", bad)]))
    assert f"has weight {bad!r}; write an integer 0..1000000" in message


def test_a_backend_that_is_no_service_of_the_stack_is_refused():
    objects = http_rules([("nvidia", 95), ("ascend", 5)])
    route = find(objects, "HTTPRoute")
    route["spec"]["rules"][0]["backendRefs"][1] |= {"group": "example.com", "kind": "Bucket"}
    found = routes_valid(objects)
    assert any("is no Service of the stack" in m for m in found)
    jump = stack_violations("no-unsafe-weight-jump", objects, {"previousWeight": 5})
    assert any("cannot judge the Ascend share" in m for m in jump)


def test_the_pin_rules_need_no_second_backend():
    objects = good_stack(5, router="gateway-api")
    with_pins(find(objects, "HTTPRoute"), "gateway-api")
    assert routes_valid(objects) == []


# --- the program's own render of both routers -------------------------------------------------

IMAGE_CONFIG = {"verifiedAscendImage": ASCEND_IMAGE}


def judged_render(render_objects, base_config, head_config, approved=False) -> dict[str, str]:
    """{policy: message} of the mandatory violations of the head's render, judged as the base's
    judge does: the base's facts and previous weight, the envelope between both configs."""
    from components.settings import load_fleet
    from dualstack.offline.envelope import config_changes
    from dualstack.offline.policy_config import pack_config

    base, head = load_fleet(base_config), load_fleet(head_config)
    envelope = config_changes(base_config, head_config, base, head)
    config = pack_config(head, base.weights, base, envelope=envelope, owner_approved=approved)
    results = run_policies(render_objects(head_config), config)
    return {r.policy: r.message for r in results if r.outcome == "violation"}


def at(router: str, weight: int, **keys) -> dict:
    return cfg(ascendWeight=str(weight), router=router, **IMAGE_CONFIG, **keys)


@pytest.mark.parametrize(("previous", "weight"), [(0, 0), (5, 20), (80, 100)])
def test_the_rendered_routers_pass_every_mandatory_policy(render_objects, router, previous, weight):
    assert judged_render(render_objects, at(router, previous), at(router, weight)) == {}


def test_the_rendered_shadow_rung_passes_and_a_skip_from_it_does_not(render_objects, router):
    shadow = at(router, 0, mirrorPercent="10")
    assert judged_render(render_objects, shadow, shadow) == {}
    assert judged_render(render_objects, shadow, at(router, 5)) == {}  # the step leaving it
    found = judged_render(render_objects, shadow, at(router, 20))
    assert set(found) == {"no-unsafe-weight-jump"}


# --- the routing keys are the safety envelope ---------------------------------------------------


def test_switching_routers_needs_the_owners_and_then_no_raise(render_objects, router):
    other = "gateway-api" if router == "istio" else "istio"
    base = at(router, 20)
    [message] = judged_render(render_objects, base, at(other, 20)).values()
    assert message.startswith(f"router: {router} -> {other}: a change of the safety envelope")
    assert judged_render(render_objects, base, at(other, 20), approved=True) == {}
    found = judged_render(render_objects, base, at(other, 50), approved=True)
    assert set(found) == {"safety-envelope-unchanged"}
    assert "raises the Ascend weight from 20% to 50%" in found["safety-envelope-unchanged"]


def test_a_decrease_does_not_carry_a_routing_change_past_the_owners(render_objects, router):
    """A decrease alone always passes; a router switch riding on it needs the owners (else an
    unreviewed envelope change would land with a rollback), and passes once approved."""
    other = "gateway-api" if router == "istio" else "istio"
    base, head = at(router, 20), at(other, 5, bakeTime="1h")
    found = judged_render(render_objects, base, head)
    assert set(found) == {"safety-envelope-unchanged"}
    assert found["safety-envelope-unchanged"].startswith(
        f"router: {router} -> {other}: a change of the safety envelope"
    )
    assert judged_render(render_objects, base, head, approved=True) == {}
    assert judged_render(render_objects, base, at(router, 5)) == {}


def test_a_new_pin_header_is_judged_by_the_base_s_until_approved(render_objects, router):
    """Unapproved, the head's pins carry another header than the base's: they are routes,
    and the Ascend pin sends 100% to Ascend. Approved, the head's header is the judged one."""
    base, head = at(router, 20), at(router, 20, testerPinning={"header": "x-dualstack-team"})
    found = judged_render(render_objects, base, head)
    assert found["safety-envelope-unchanged"].startswith(
        "testerPinning.header: x-dualstack-hardware -> x-dualstack-team: a change of the safety"
    )
    assert "from 20% to 100%" in found["no-unsafe-weight-jump"]
    assert judged_render(render_objects, base, head, approved=True) == {}


def test_entering_the_shadow_rung_or_a_new_bake_time_needs_the_owners(render_objects, router):
    base = at(router, 0)
    for head, fact in [
        (at(router, 0, mirrorPercent="10"), "mirrorPercent: 0 -> 10"),
        (at(router, 0, bakeTime="0s"), "bakeTime: 24h -> 0s"),
    ]:
        [message] = judged_render(render_objects, base, head).values()
        assert message.startswith(f"{fact}: a change of the safety envelope"), fact
        assert judged_render(render_objects, base, head, approved=True) == {}
