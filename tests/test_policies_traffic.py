"""Traffic policies over hand-built ResourceValidationArgs / StackValidationArgs."""

from __future__ import annotations

import pytest

from policies.traffic import allowed_increase
from tests.policy_objects import (
    NOT_APPLICABLE,
    find,
    good_stack,
    resource_args,
    stack_violations,
    violations,
    virtual_service,
)

LADDER = (0, 5, 20, 50, 80, 100)


def on_ladder(weight, config=None):
    return violations("ascend-weight-on-ladder", resource_args(virtual_service(weight), config))


def jump(weight, config=None):
    return violations("no-unsafe-weight-jump", resource_args(virtual_service(weight), config))


class TestAscendWeightOnLadder:
    @pytest.mark.parametrize("weight", LADDER)
    def test_every_step_passes(self, weight):
        assert on_ladder(weight) == []

    def test_off_ladder_weight_fails_naming_value_and_steps(self):
        [message] = on_ladder(30)
        assert "VirtualService inference/inference-vs" in message
        assert "30%" in message
        assert "0, 5, 20, 50, 80, 100" in message

    def test_missing_properties_are_no_violation(self):
        bare = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "metadata": {}}
        assert violations("ascend-weight-on-ladder", resource_args(bare)) == []
        vs = virtual_service(20)
        del vs["spec"]["http"][0]["route"][1]["weight"]
        [message] = violations("ascend-weight-on-ladder", resource_args(vs))
        assert "weight None" in message

    def test_other_kinds_are_ignored(self):
        assert (
            violations("ascend-weight-on-ladder", resource_args(find(good_stack(), "Service")))
            == []
        )

    def test_configured_ladder_overrides_default(self):
        assert on_ladder(30, {"ladder": [0, 30, 100]}) == []
        assert len(on_ladder(20, {"ladder": [0, 30, 100]})) == 1

    def test_configured_subset_name(self):
        vs = virtual_service(30)
        vs["spec"]["http"][0]["route"][1]["destination"]["subset"] = "npu"
        assert violations("ascend-weight-on-ladder", resource_args(vs)) == []
        assert (
            len(violations("ascend-weight-on-ladder", resource_args(vs, {"ascendSubset": "npu"})))
            == 1
        )

    def test_malformed_ladder_config_fails_closed(self):
        [message] = on_ladder(20, {"ladder": [0, 50, 20, 100]})
        assert message.startswith("policy config ladder = ")


class TestNoUnsafeWeightJump:
    @pytest.mark.parametrize(
        ("previous", "weight"), [(5, 20), (20, 50), (80, 100), (0, 5), (20, 20)]
    )
    def test_one_step_up_or_unchanged_passes(self, previous, weight):
        assert jump(weight, {"previousWeight": previous}) == []

    @pytest.mark.parametrize(("previous", "weight"), [(80, 0), (50, 20), (100, 0), (20, 5)])
    def test_any_decrease_passes(self, previous, weight):
        assert jump(weight, {"previousWeight": previous}) == []

    def test_skipping_steps_fails_with_the_allowed_step(self):
        [message] = jump(80, {"previousWeight": 5})
        assert "from 5% to 80%" in message
        assert "next ladder step, 20%" in message
        assert "Set ascendWeight to 20" in message

    @pytest.mark.parametrize(("weight", "ok"), [(0, True), (5, True), (20, False), (100, False)])
    def test_first_deploy_allows_only_zero_or_first_step(self, weight, ok):
        found = jump(weight, {})
        assert (found == []) is ok
        if not ok:
            assert "no previousWeight" in found[0] and "first ladder step 5%" in found[0]

    def test_max_step_replaces_the_ladder_rule(self):
        assert jump(20, {"previousWeight": 5, "maxStep": 15}) == []
        [message] = jump(50, {"previousWeight": 5, "maxStep": 15})
        assert "maxStep=15" in message and "20%" in message

    def test_configured_ladder(self):
        assert jump(10, {"previousWeight": 0, "ladder": [0, 10, 100]}) == []
        assert len(jump(100, {"previousWeight": 0, "ladder": [0, 10, 100]})) == 1

    def test_previous_weight_off_the_ladder_goes_to_the_next_step_above(self):
        assert jump(20, {"previousWeight": 10}) == []
        assert len(jump(50, {"previousWeight": 10})) == 1

    @pytest.mark.parametrize("bad", ["abc", 150, 5.5, -1, True])
    def test_bad_previous_weight_fails_closed(self, bad):
        [message] = jump(5, {"previousWeight": bad})
        assert "previousWeight" in message and "not an integer 0..100" in message

    def test_non_integer_route_weight_fails(self):
        [message] = jump(20.5, {"previousWeight": 5})
        assert "20.5" in message and "not an integer" in message

    def test_missing_properties_are_no_violation(self):
        vs = virtual_service(80)
        del vs["spec"]
        assert violations("no-unsafe-weight-jump", resource_args(vs, {"previousWeight": 5})) == []


@pytest.mark.parametrize(
    ("previous", "max_step", "limit"),
    [(None, None, 5), (5, None, 20), (80, None, 100), (100, None, 100), (5, 30, 35), (90, 30, 100)],
)
def test_allowed_increase(previous, max_step, limit):
    assert allowed_increase(previous, LADDER, max_step) == limit


def routes(objects):
    return stack_violations("route-weights-valid", objects)


class TestRouteWeightsValid:
    def test_clean_stack_passes(self):
        assert routes(good_stack(20)) == []

    def test_weights_must_sum_to_100(self):
        stack = good_stack(20)
        stack[3] = virtual_service(20, nvidia_weight=70)
        [message] = routes(stack)
        assert "nvidia=70, ascend=20 sum to 90, not 100" in message

    @pytest.mark.parametrize("bad", [20.5, -5, 105, "20"])
    def test_weights_must_be_integers_0_to_100(self, bad):
        stack = good_stack(20)
        stack[3] = virtual_service(bad, nvidia_weight=80)
        [message] = routes(stack)
        assert f"weight {bad!r}" in message

    def test_a_dropped_zero_weight_is_reported(self):
        stack = good_stack(0)
        del find(stack, "VirtualService")["spec"]["http"][0]["route"][1]["weight"]
        [message] = routes(stack)
        assert "explicit `weight: 0`" in message

    def test_single_destination_without_weight_takes_all(self):
        stack = good_stack(0)
        route = find(stack, "VirtualService")["spec"]["http"][0]["route"]
        del route[1]
        del route[0]["weight"]
        assert routes(stack) == []

    def test_route_to_undefined_subset_fails(self):
        stack = good_stack(20)
        find(stack, "VirtualService")["spec"]["http"][0]["route"][1]["destination"]["subset"] = (
            "npu"
        )
        [message] = routes(stack)
        assert "subset 'npu'" in message and "no DestinationRule" in message

    def test_subset_selecting_nothing_fails(self):
        stack = good_stack(20)
        find(stack, "DestinationRule")["spec"]["subsets"][1]["labels"]["hardware"] = "npu"
        [message] = routes(stack)
        assert "subset 'ascend'" in message and "app=inference-service, hardware=npu" in message
        assert "503 UH no_healthy_upstream" in message

    def test_subset_selecting_two_workloads_fails(self):
        stack = good_stack(20)
        del find(stack, "DestinationRule")["spec"]["subsets"][1]["labels"]["hardware"]
        [message] = routes(stack)
        assert "several workloads" in message
        assert "inference-blue" in message and "inference-green" in message

    def test_pods_outside_the_host_service_are_not_selected(self):
        stack = good_stack(20)
        find(stack, "Service")["spec"]["selector"] = {"app": "other"}
        assert len(routes(stack)) == 2  # both subsets now select no endpoint of the host

    def test_short_host_names_resolve_in_the_rule_namespace(self):
        stack = good_stack(20)
        find(stack, "DestinationRule")["spec"]["host"] = "inference-service"
        assert routes(stack) == []

    def test_missing_properties_do_not_crash(self):
        stack = good_stack(20)
        del find(stack, "DestinationRule")["spec"]
        del find(stack, "Deployment", "nvidia")["spec"]
        found = routes(stack)
        assert len(found) == 2 and all("no DestinationRule" in m for m in found)
        assert routes([]) == []

    def test_has_no_config_and_ignores_unknown_keys(self):
        assert stack_violations("route-weights-valid", good_stack(20), {"ladder": "x"}) == []


def test_route_weight_policy_is_applicable_without_istio_objects():
    assert routes([find(good_stack(), "Service")]) != NOT_APPLICABLE
