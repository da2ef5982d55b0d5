"""Traffic policies over hand-built StackValidationArgs.

The ladder and step policies run under both routers (`router` fixture): a VirtualService with
its DestinationRule, and an HTTPRoute to the direct Services refuse the same unsafe steps.
"""

from __future__ import annotations

import copy

import pytest

from policies.traffic import allowed_increase
from tests.support.policy_objects import (
    HOST,
    NOT_APPLICABLE,
    ROUTE_OBJECT,
    ROUTERS,
    find,
    good_stack,
    route_object,
    stack_reports,
    stack_violations,
    urn,
    virtual_service,
    with_route,
)

LADDER = (0, 5, 20, 50, 80, 100)


def with_vs(vs):
    """The clean stack with its VirtualService replaced by `vs`."""
    return [obj for obj in good_stack(20) if obj["kind"] != "VirtualService"] + [vs]


@pytest.fixture(params=ROUTERS)
def router(request) -> str:
    """Each router in turn: `istio` (VirtualService) and `gateway-api` (HTTPRoute)."""
    return request.param


def routed(router: str, weight, nvidia_weight=None):
    """The clean stack of `router` with its split at `weight`."""
    return with_route(good_stack(20, router=router), route_object(router, weight, nvidia_weight))


def on_ladder(weight, config=None, router="istio"):
    return stack_violations("ascend-weight-on-ladder", routed(router, weight), config)


def jump(weight, config=None, router="istio"):
    return stack_violations("no-unsafe-weight-jump", routed(router, weight), config)


class TestAscendWeightOnLadder:
    @pytest.mark.parametrize("weight", LADDER)
    def test_every_step_passes(self, weight, router):
        assert on_ladder(weight, router=router) == []

    def test_off_ladder_weight_fails_naming_value_and_steps(self, router):
        [message] = on_ladder(30, router=router)
        assert message == (
            f"{ROUTE_OBJECT[router]} route 'split' sends 30% to Ascend pods "
            "(Deployment inference/inference-green), which is not a ladder step (0, 5, 20, 50, "
            "80, 100); set ascendWeight to one of them"
        )

    def test_weights_are_proportions_in_both_routers(self, router):
        """95:5 and 19:1 both send 5%; 97:3 sends 3%, off the ladder."""
        assert on_ladder(5, router=router) == []
        if router == "gateway-api":  # Istio's totalWeight 100 is route-weights-valid's rule
            assert on_ladder(1, router=router, config=None) != []
            assert stack_violations("ascend-weight-on-ladder", routed(router, 1, 19)) == []

    @pytest.mark.parametrize("policy", ["ascend-weight-on-ladder", "no-unsafe-weight-jump"])
    def test_a_weight_violation_is_reported_on_the_route_object(self, policy, router):
        stack = routed(router, 30)
        route = next(o for o in stack if o["kind"] in ("VirtualService", "HTTPRoute"))
        [(_message, where)] = stack_reports(policy, stack, {"previousWeight": 0})
        assert where == urn(route)

    def test_an_httproute_backend_without_a_weight_weighs_1(self):
        """Gateway API: a backendRef's weight defaults to 1. Beside a weight of 1 that is a
        50:50 split (on the ladder); beside 4 it is 20%; beside 3 it is 25%, off the ladder."""
        gateway = "gateway-api"
        assert stack_violations("ascend-weight-on-ladder", routed(gateway, None, 1)) == []
        assert stack_violations("ascend-weight-on-ladder", routed(gateway, None, 4)) == []
        [message] = stack_violations("ascend-weight-on-ladder", routed(gateway, None, 3))
        assert "sends 25% to Ascend pods" in message

    def test_missing_properties_are_no_violation(self):
        bare = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "metadata": {}}
        assert stack_violations("ascend-weight-on-ladder", with_vs(bare)) == []
        vs = virtual_service(20)
        del vs["spec"]["http"][0]["route"][1]["weight"]
        [message] = stack_violations("ascend-weight-on-ladder", with_vs(vs))
        assert message.startswith(
            "cannot judge the Ascend share: VirtualService inference/inference-vs route 'split' "
            "has weights"
        )
        assert "subset 'ascend'=None" in message and "cannot be judged" in message
        [(_message, where)] = stack_reports(
            "no-unsafe-weight-jump", with_vs(vs), {"previousWeight": 5}
        )
        assert where == urn(vs)

    def test_a_stack_without_routes_passes(self):
        assert stack_violations("ascend-weight-on-ladder", [find(good_stack(), "Service")]) == []

    def test_configured_ladder_overrides_default(self, router):
        assert on_ladder(30, {"ladder": [0, 30, 100]}, router) == []
        assert len(on_ladder(20, {"ladder": [0, 30, 100]}, router)) == 1

    def test_ascend_pods_are_known_by_their_accelerator_or_the_ascend_subset(self):
        """Either sign makes a pod an Ascend pod: a name alone cannot hide one."""
        nothing_requests_it = {"ascendResource": "example.com/none"}
        assert len(on_ladder(30, nothing_requests_it)) == 1  # still the 'ascend' subset's pods
        assert len(on_ladder(30, {"ascendSubset": "npu"})) == 1  # still Ascend910 pods
        both = {"ascendResource": "example.com/none", "ascendSubset": "npu"}
        assert on_ladder(30, both) == []  # neither sign: the 30% goes to no Ascend pod

    def test_malformed_ladder_config_fails_closed(self, router):
        [message] = on_ladder(20, {"ladder": [0, 50, 20, 100]}, router)
        assert message.startswith("policy config ladder = ")


class TestNoUnsafeWeightJump:
    @pytest.mark.parametrize(
        ("previous", "weight"), [(5, 20), (20, 50), (80, 100), (0, 5), (20, 20)]
    )
    def test_one_step_up_or_unchanged_passes(self, previous, weight, router):
        assert jump(weight, {"previousWeight": previous}, router) == []

    @pytest.mark.parametrize(("previous", "weight"), [(80, 0), (50, 20), (100, 0), (20, 5)])
    def test_any_decrease_passes(self, previous, weight, router):
        assert jump(weight, {"previousWeight": previous}, router) == []

    def test_skipping_steps_fails_with_the_allowed_step(self, router):
        [message] = jump(80, {"previousWeight": 5}, router)
        assert message.startswith(f"{ROUTE_OBJECT[router]} raises the Ascend weight")
        assert "from 5% to 80%" in message
        assert "next ladder step, 20%" in message
        assert "Set ascendWeight to 20" in message

    @pytest.mark.parametrize(("weight", "ok"), [(0, True), (5, True), (20, False), (100, False)])
    def test_first_deploy_allows_only_zero_or_first_step(self, weight, ok, router):
        found = jump(weight, {}, router)
        assert (found == []) is ok
        if not ok:
            assert "no previousWeight" in found[0] and "first ladder step 5%" in found[0]

    def test_max_step_replaces_the_ladder_rule(self, router):
        assert jump(20, {"previousWeight": 5, "maxStep": 15}, router) == []
        [message] = jump(50, {"previousWeight": 5, "maxStep": 15}, router)
        assert "maxStep=15" in message and "20%" in message

    def test_the_jump_messages_read_whole(self, router):
        """The step rule's three messages as a reviewer reads them, route and Deployment named."""
        where = ROUTE_OBJECT[router]
        via = "; route 'split' sends it to Deployment inference/inference-green"
        assert jump(80, {"previousWeight": 5}, router) == [
            f"{where} raises the Ascend weight from 5% to 80%: an increase may go only to the "
            f"next ladder step, 20%. Set ascendWeight to 20 (decreases are always allowed){via}"
        ]
        assert jump(50, {"previousWeight": 5, "maxStep": 15}, router) == [
            f"{where} raises the Ascend weight from 5% to 50%: an increase may go only to at "
            f"most maxStep=15 points, 20%. Set ascendWeight to 20 (decreases are always "
            f"allowed){via}"
        ]
        assert jump(20, {}, router) == [
            f"{where} sends 20% to Ascend with no previousWeight in the policy config (a first "
            "deploy): only 0% or the first ladder step 5% is allowed. If the stack is deployed, "
            f"write the config with `dualstack policy-config --from-stack-output`{via}"
        ]

    def test_max_step_allows_what_the_ladder_would_not(self, router):
        """maxStep=30 from 5% allows 35%, which is beyond the ladder's next step (20%)."""
        assert jump(35, {"previousWeight": 5, "maxStep": 30}, router) == []
        [message] = jump(35, {"previousWeight": 5, "maxStep": 29}, router)
        assert "an increase may go only to at most maxStep=29 points, 34%" in message

    @pytest.mark.parametrize(("max_step", "ok"), [(1, True), (100, True), (0, False), (101, False)])
    def test_max_step_is_1_to_100_points(self, max_step, ok):
        found = jump(5, {"previousWeight": 5, "maxStep": max_step})
        if ok:
            assert found == []
        else:
            [message] = found
            assert message.startswith(f"policy config maxStep = {max_step}")

    def test_configured_ladder(self, router):
        assert jump(10, {"previousWeight": 0, "ladder": [0, 10, 100]}, router) == []
        assert len(jump(100, {"previousWeight": 0, "ladder": [0, 10, 100]}, router)) == 1

    def test_previous_weight_off_the_ladder_goes_to_the_next_step_above(self, router):
        assert jump(20, {"previousWeight": 10}, router) == []
        assert len(jump(50, {"previousWeight": 10}, router)) == 1

    @pytest.mark.parametrize("bad", ["abc", 150, 5.5, -1, True])
    def test_bad_previous_weight_fails_closed(self, bad, router):
        [message] = jump(5, {"previousWeight": bad}, router)
        assert "previousWeight" in message and "not an integer 0..100" in message

    def test_non_integer_route_weight_fails(self, router):
        [message] = jump(20.5, {"previousWeight": 5}, router)
        shown = (
            "subset 'ascend'=20.5"
            if router == "istio"
            else "ascend.inference.svc.cluster.local=20.5"
        )
        assert shown in message and "not whole numbers" in message

    def test_missing_properties_are_no_violation(self):
        vs = virtual_service(80)
        del vs["spec"]
        assert stack_violations("no-unsafe-weight-jump", with_vs(vs), {"previousWeight": 5}) == []


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

    def test_a_destination_without_a_host_reaches_no_service(self):
        """A missing host is the empty name in the route's namespace: no Service of the stack,
        so where the destination sends traffic cannot be known (fail closed)."""
        vs = virtual_service(20)
        del vs["spec"]["http"][0]["route"][1]["destination"]["host"]
        hostless = ".inference.svc.cluster.local"
        assert routes(with_vs(vs)) == [
            f"VirtualService inference/inference-vs route 'split' destination {hostless} subset "
            f"'ascend': {hostless} is no Service of the stack: where it sends traffic cannot be "
            "known; route to a Service the stack defines"
        ]

    def test_weights_must_sum_to_100(self):
        stack = good_stack(20)
        stack[3] = virtual_service(20, nvidia_weight=70)
        assert stack_reports("route-weights-valid", stack) == [
            (
                "VirtualService inference/inference-vs route 'split': weights nvidia=70, "
                "ascend=20 sum to 90, not 100; fix them",
                urn(stack[3]),
            )
        ]

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
        missing, undefined = routes(stack)
        assert "subset 'npu'" in undefined and "no DestinationRule" in undefined
        assert "name no destination of subset 'ascend'" in missing

    def test_subset_selecting_nothing_fails(self):
        stack = good_stack(20)
        find(stack, "DestinationRule")["spec"]["subsets"][1]["labels"]["hardware"] = "npu"
        route, rule = routes(stack)
        assert route == (
            f"VirtualService inference/inference-vs route 'split' destination {HOST} subset "
            f"'ascend': subset 'ascend' of {HOST} selects no pod of Service "
            "inference/inference-service (503 UH no_healthy_upstream); make the subset's labels "
            "match a pod template"
        )
        assert rule == (
            "DestinationRule inference/inference-dr subset 'ascend' labels "
            "app=inference-service, hardware=npu select no pod of any workload in the stack: "
            "requests to it fail with 503 UH no_healthy_upstream; make the labels match the pod "
            "template"
        )

    def test_subset_selecting_two_workloads_fails(self):
        stack = good_stack(20)
        del find(stack, "DestinationRule")["spec"]["subsets"][1]["labels"]["hardware"]
        assert stack_reports("route-weights-valid", stack) == [
            (
                "DestinationRule inference/inference-dr subset 'ascend' labels "
                "app=inference-service select the pods of several workloads (Deployment "
                "inference/inference-blue, Deployment inference/inference-green); make them "
                "select one",
                urn(find(stack, "DestinationRule")),
            )
        ]

    def test_a_subset_without_labels_is_shown_as_such(self):
        """A subset with no labels selects every pod of its host's Service: both backends."""
        stack = good_stack(20)
        find(stack, "DestinationRule")["spec"]["subsets"][1]["labels"] = {}
        [message] = routes(stack)
        assert message.startswith(
            "DestinationRule inference/inference-dr subset 'ascend' labels (no labels) select "
            "the pods of several workloads ("
        )

    def test_a_rule_for_a_host_outside_the_stack_selects_in_its_own_namespace(self):
        """No Service of the stack behind the host: the subset's labels are matched against
        the workloads of the rule's namespace, where exactly one (the Ascend one) carries them.
        """
        stack = good_stack(20)
        rule = copy.deepcopy(find(stack, "DestinationRule"))
        rule["metadata"]["name"] = "mirror-dr"
        rule["spec"]["host"] = "mirror.example.com"
        rule["spec"]["subsets"] = [rule["spec"]["subsets"][1]]
        assert routes([*stack, rule]) == []
        rule["metadata"]["namespace"] = "batch"
        assert routes([*stack, rule]) == [
            "DestinationRule batch/mirror-dr subset 'ascend' labels app=inference-service, "
            "hardware=ascend select no pod of any workload in the stack: requests to it fail "
            "with 503 UH no_healthy_upstream; make the labels match the pod template"
        ]

    def test_pods_outside_the_host_service_are_not_selected(self):
        stack = good_stack(20)
        find(stack, "Service")["spec"]["selector"] = {"app": "other"}
        found = routes(stack)  # both destinations reach nothing; both subsets select nothing
        assert len(found) == 4
        assert sum("Service inference/inference-service selects no pod" in m for m in found) == 2
        assert (
            sum(m.startswith("DestinationRule inference/inference-dr subset") for m in found) == 2
        )

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

    def test_ignores_keys_of_other_policies(self):
        assert routes_with(good_stack(20), {"ladder": "x", "previousWeight": "abc"}) == []


def routes_with(objects, config):
    return stack_violations("route-weights-valid", objects, config)


def split_of(stack):
    """The destinations of the VirtualService's split route, for editing."""
    return find(stack, "VirtualService")["spec"]["http"][0]["route"]


def rename_subsets(stack, names):
    """Rename the subsets nvidia/ascend in the DestinationRule and the route alike."""
    for entry in find(stack, "DestinationRule")["spec"]["subsets"] + [
        dest["destination"] for dest in split_of(stack)
    ]:
        key = "name" if "name" in entry else "subset"
        entry[key] = names[entry[key]]
    return stack


class TestRouteWeightsValidConfig:
    """`totalWeight`, `nvidiaSubset`, `ascendSubset`: every weighted route names both subsets
    and sums to the total (REFERENCE.md: always emit `weight: 0`)."""

    @pytest.mark.parametrize("weight", LADDER)
    def test_every_ladder_step_passes_with_the_settings_config(self, weight):
        config = {"totalWeight": 100, "nvidiaSubset": "nvidia", "ascendSubset": "ascend"}
        assert routes_with(good_stack(weight), config) == []

    def test_a_dropped_weight_zero_route_fails_naming_the_missing_subset(self):
        stack = good_stack(0)
        del split_of(stack)[1]  # the ascend destination at weight 0, dropped
        [message] = routes(stack)
        assert message == (
            "VirtualService inference/inference-vs route 'split': weights nvidia=100 name no "
            "destination of subset 'ascend'; list every backend's subset in the split, the idle "
            "one with an explicit `weight: 0`"
        )

    def test_a_dropped_nvidia_route_at_100_fails(self):
        stack = good_stack(100)
        del split_of(stack)[0]
        [message] = routes(stack)
        assert "weights ascend=100 name no destination of subset 'nvidia'" in message

    def test_weights_summing_to_99_fail(self):
        stack = good_stack(20)
        split_of(stack)[0]["weight"] = 79
        [message] = routes(stack)
        assert "nvidia=79, ascend=20 sum to 99, not 100; fix them" in message

    def test_a_pin_route_without_weight_needs_no_other_subset(self):
        """A header-matched route to one subset with no weight (a pin) is not a split."""
        stack = good_stack(20)
        http = find(stack, "VirtualService")["spec"]["http"]
        pin = {"destination": {"host": HOST, "subset": "ascend"}}
        http.insert(0, {"name": "debug-pin", "match": [{"headers": {}}], "route": [pin]})
        assert routes(stack) == []
        pin["weight"] = 100  # now weighted: a split that lacks nvidia
        [message] = routes(stack)
        assert "route 'debug-pin'" in message and "subset 'nvidia'" in message

    @pytest.mark.parametrize("config", [None, {}, {"totalWeight": None, "ascendSubset": None}])
    def test_missing_config_keys_take_the_defaults(self, config):
        assert routes_with(good_stack(20), config) == []
        stack = good_stack(20)
        split_of(stack)[0]["weight"] = 79
        assert len(routes_with(stack, config)) == 1
        stack = good_stack(0)
        del split_of(stack)[1]
        assert len(routes_with(stack, config)) == 1

    def test_total_weight_override(self):
        stack = good_stack(20)
        split_of(stack)[0]["weight"] = 800
        split_of(stack)[1]["weight"] = 200
        assert routes_with(stack, {"totalWeight": 1000}) == []
        found = routes(stack)
        assert [m.split(": ", 1)[1] for m in found] == [
            "destination nvidia has weight 800.0; write an integer 0..100 (including an "
            "explicit `weight: 0`)",
            "destination ascend has weight 200.0; write an integer 0..100 (including an "
            "explicit `weight: 0`)",
        ]
        [message] = routes_with(good_stack(20), {"totalWeight": 1000})
        assert "sum to 100, not 1000" in message

    def test_subset_name_overrides(self):
        stack = rename_subsets(good_stack(20), {"nvidia": "gpu", "ascend": "npu"})
        assert routes_with(stack, {"nvidiaSubset": "gpu", "ascendSubset": "npu"}) == []
        [message] = routes(stack)
        assert "name no destination of subset 'nvidia', 'ascend'" in message
        [message] = routes_with(stack, {"nvidiaSubset": "gpu"})
        assert "subset 'ascend';" in message

    @pytest.mark.parametrize(
        ("config", "text"),
        [
            ({"totalWeight": 0}, "totalWeight = 0.0 is not an integer 1..2147483647"),
            ({"totalWeight": "abc"}, "totalWeight = 'abc' is not an integer"),
            ({"totalWeight": 99.5}, "totalWeight = 99.5 is not an integer"),
            ({"totalWeight": True}, "totalWeight = True is not an integer"),
            ({"ascendSubset": 5}, "ascendSubset = 5.0 is not a non-empty string"),
            ({"nvidiaSubset": ""}, "nvidiaSubset = '' is not a non-empty string"),
            (
                {"nvidiaSubset": "ascend"},
                "nvidiaSubset and ascendSubset both name subset 'ascend'",
            ),
        ],
    )
    def test_malformed_config_is_one_violation(self, config, text):
        [message] = routes_with(good_stack(20), config)
        assert message.startswith(f"policy config {text}")
        assert message.endswith("regenerate it with `dualstack policy-config`")


def test_route_weight_policy_is_applicable_without_istio_objects():
    assert routes([find(good_stack(), "Service")]) != NOT_APPLICABLE
