"""Traffic is recognised by where it goes: every route destination is resolved to the pods it
reaches, and the Ascend share judged is the largest any route sends to Ascend pods.

The two bypasses measured on main (issue 11): a route to the Ascend Service's host without a
subset, and a catch-all match route placed first, both sent up to 100% to Ascend while every
policy passed, because the policies recognised Ascend traffic by the subset NAME only.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from policies.routers import all_routes
from policies.stack_view import StackView
from policies.traffic_share import ascend_shares
from tests.support.policy_objects import (
    DIRECT_HOST,
    HOST,
    JUDGED,
    NAMESPACE,
    backend_ref,
    deployment,
    direct_service,
    find,
    good_stack,
    stack_args,
    stack_violations,
)

SHARE_POLICIES = (
    "ascend-weight-on-ladder",
    "no-unsafe-weight-jump",
    "rollback-capacity",
    "precision-verified-before-promotion",
)
"""The policies that judge the Ascend share."""
AT_5 = {
    "previousWeight": 5,
    "previousAscendImage": "registry/inference-service:v1.2.3-npu",
    **JUDGED["precision-verified-before-promotion"],  # the base verified the served pair
}


def stack_at_5() -> list[dict]:
    """The clean stack deployed at 5%, with the program's per-backend Services."""
    return [*good_stack(5), direct_service("nvidia"), direct_service("ascend")]


def http(stack: list[dict]) -> list[dict]:
    """The VirtualService's HTTP routes, for editing."""
    return find(stack, "VirtualService")["spec"]["http"]


def dest(host: str, subset: str | None = None, weight: int | None = None) -> dict:
    destination = {"host": host, **({"subset": subset} if subset else {})}
    return {"destination": destination, **({"weight": weight} if weight is not None else {})}


def all_violations(stack: list[dict], config: dict) -> dict[str, list[str]]:
    """Violations of every policy over `stack`, by policy (failing policies only)."""
    found = {}
    for policy in (*SHARE_POLICIES, "route-weights-valid"):
        result = stack_violations(policy, stack, {**JUDGED.get(policy, {}), **config})
        if result and result != "not applicable":
            found[policy] = result
    return found


def shares(stack: list[dict], config: dict | None = None):
    return ascend_shares(StackView.of(stack_args(stack).resources), config or {})


class TestMeasuredBypasses:
    def test_a_route_to_the_ascend_service_host_without_a_subset_is_refused(self):
        """The split keeps its names (nvidia 95, ascend 5) but a route placed first sends all
        traffic to the Ascend Service's host: 100% on Ascend."""
        stack = stack_at_5()
        http(stack).insert(0, {"name": "direct", "route": [dest(DIRECT_HOST["ascend"])]})
        found = all_violations(stack, AT_5)
        [jump] = found["no-unsafe-weight-jump"]
        assert jump == (
            "VirtualService inference/inference-vs raises the Ascend weight from 5% to 100%: an "
            "increase may go only to the next ladder step, 20%. Set ascendWeight to 20 "
            "(decreases are always allowed); route 'direct' sends it to Deployment "
            "inference/inference-green"
        )
        [capacity] = found["rollback-capacity"]
        assert "inference-green has 2 replicas for 100% of traffic" in capacity
        assert "needs at least 4" in capacity
        assert "route-weights-valid" not in found  # the bypass is a valid route: only the share

    def test_a_hostname_only_destination_inside_the_split_counts(self):
        """nvidia 0 and ascend 5 by subset, plus 95 to the Ascend host: both subsets named,
        weights sum to 100, so only the resolved share tells."""
        stack = stack_at_5()
        http(stack)[0]["route"] = [
            dest(HOST, "nvidia", 0),
            dest(HOST, "ascend", 5),
            dest(DIRECT_HOST["ascend"], None, 95),
        ]
        found = all_violations(stack, AT_5)
        assert set(found) == {"no-unsafe-weight-jump", "rollback-capacity"}
        [jump] = found["no-unsafe-weight-jump"]
        assert "raises the Ascend weight from 5% to 100%" in jump
        assert "route 'split' sends it to Deployment inference/inference-green" in jump

    def test_a_catch_all_match_route_placed_first_is_refused(self):
        stack = stack_at_5()
        catch_all = {
            "name": "catch-all",
            "match": [{"uri": {"prefix": "/"}}],
            "route": [dest(HOST, "ascend")],
        }
        http(stack).insert(0, catch_all)
        found = all_violations(stack, AT_5)
        [jump] = found["no-unsafe-weight-jump"]
        assert "raises the Ascend weight from 5% to 100%" in jump
        assert jump.endswith("route 'catch-all' sends it to Deployment inference/inference-green")
        [capacity] = found["rollback-capacity"]
        assert "inference-green has 2 replicas for 100% of traffic" in capacity

    def test_a_route_to_the_shared_host_counts_wholly_as_ascend(self):
        """The shared Service selects both backends: which pod serves is not the policy's to
        guess, so the worst case (all of it on Ascend) is judged."""
        stack = stack_at_5()
        http(stack).insert(0, {"name": "any-pod", "route": [dest(HOST)]})
        [jump] = stack_violations("no-unsafe-weight-jump", stack, AT_5)
        assert "from 5% to 100%" in jump and "route 'any-pod'" in jump
        assert shares(stack).least == 0  # NVIDIA may still get it: it must stay full

    def test_the_same_share_through_the_direct_hosts_passes(self):
        """Routing by the per-backend hosts instead of subsets is fine at a legal step."""
        stack = stack_at_5()
        http(stack)[0]["route"] = [
            dest(DIRECT_HOST["nvidia"], None, 80),
            dest(DIRECT_HOST["ascend"], None, 20),
        ]
        for policy in SHARE_POLICIES:
            assert stack_violations(policy, stack, AT_5) == [], policy


class TestResolution:
    @pytest.mark.parametrize("weight", [0, 5, 20, 50, 80, 100])
    def test_host_and_subset_routes_pass_at_every_rung(self, weight):
        stack = good_stack(weight)
        config = {"previousWeight": weight, **JUDGED["precision-verified-before-promotion"]}
        for policy in (*SHARE_POLICIES, "route-weights-valid"):
            assert stack_violations(policy, stack, config) == [], policy
        assert shares(stack).most == weight

    @pytest.mark.parametrize(
        ("destination", "why"),
        [
            (
                dest("inference-canary", None, 20),
                "inference-canary.inference.svc.cluster.local is no Service of the stack",
            ),
            (dest("api.example.com", None, 20), "api.example.com is no Service of the stack"),
            (
                dest(HOST, "canary", 20),
                f"subset 'canary' of {HOST}, which no DestinationRule in the stack defines",
            ),
        ],
    )
    def test_a_destination_to_nothing_known_fails_naming_route_and_destination(
        self, destination, why
    ):
        stack = good_stack(20)
        http(stack)[0]["route"][1] = destination
        found = all_violations(stack, {"previousWeight": 20})
        assert set(found) >= set(SHARE_POLICIES) | {"route-weights-valid"}
        shown = destination["destination"]["host"]
        if "." not in shown:
            shown = f"{shown}.{NAMESPACE}.svc.cluster.local"
        if "subset" in destination["destination"]:
            shown += " subset 'canary'"
        where = f"VirtualService inference/inference-vs route 'split' destination {shown}: {why}"
        assert any(m.startswith(where) for m in found["route-weights-valid"])
        for policy in SHARE_POLICIES:
            assert any(where in m for m in found[policy]), policy

    def test_a_service_selecting_nothing_fails(self):
        stack = stack_at_5()
        stack[-1]["spec"]["selector"] = {"app": "inference-service", "hardware": "npu"}
        http(stack).insert(0, {"name": "direct", "route": [dest(DIRECT_HOST["ascend"])]})
        unknown, jump = stack_violations("no-unsafe-weight-jump", stack, AT_5)
        assert unknown == (
            "cannot judge the Ascend share: VirtualService inference/inference-vs route 'direct' "
            f"destination {DIRECT_HOST['ascend']}: Service inference/inference-service-ascend "
            "selects no pod of any workload in the stack (503 UH no_healthy_upstream); make its "
            "selector match a pod template"
        )
        # pods outside the stack may carry those labels: judged as if they were Ascend pods
        assert "from 5% to 100%" in jump
        assert jump.endswith("route 'direct' sends it to pods the stack does not know")

    def test_a_service_without_selector_reaches_no_pod(self):
        stack = stack_at_5()
        del stack[-1]["spec"]["selector"]  # endpoints would be managed by hand: unknown
        http(stack).insert(0, {"name": "direct", "route": [dest(DIRECT_HOST["ascend"])]})
        [message] = stack_violations("route-weights-valid", stack)
        assert "Service inference/inference-service-ascend selects no pod" in message

    def test_a_zero_weight_destination_to_nothing_is_only_a_route_error(self):
        """It carries no traffic, so the share is known; the route is still wrong."""
        stack = good_stack(0)
        http(stack)[0]["route"][1] = dest("inference-canary", None, 0)
        assert stack_violations("no-unsafe-weight-jump", stack, {"previousWeight": 0}) == []
        found = stack_violations("route-weights-valid", stack)
        assert any("destination inference-canary.inference.svc.cluster.local: " in m for m in found)

    def test_tcp_routes_count_too(self):
        stack = stack_at_5()
        find(stack, "VirtualService")["spec"]["tcp"] = [{"route": [dest(DIRECT_HOST["ascend"])]}]
        [jump] = stack_violations("no-unsafe-weight-jump", stack, AT_5)
        assert "from 5% to 100%" in jump and "route 'tcp[0]'" in jump

    def test_shares_split_by_weight_over_the_sum(self):
        """Istio splits by weight/sum (REFERENCE.md): 1 of 3 is 33.33%, off the ladder."""
        stack = good_stack(20)
        http(stack)[0]["route"][0]["weight"] = 2
        http(stack)[0]["route"][1]["weight"] = 1
        assert shares(stack).most == Fraction(100, 3)
        [message] = stack_violations("ascend-weight-on-ladder", stack)
        assert "sends 33.33% to Ascend pods" in message


def two_hosts_stack() -> list[dict]:
    """The clean stack at 0% plus a second host, `inference-pool`, selecting both backends,
    whose DestinationRule (listed FIRST) defines a subset of the SAME name with other labels:
    there, `nvidia` selects the Ascend pods."""
    pool = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "inference-pool", "namespace": NAMESPACE},
        "spec": {"selector": {"app": "inference-service"}, "ports": [{"port": 8000}]},
    }
    other = {
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": {"name": "inference-pool-dr", "namespace": NAMESPACE},
        "spec": {
            "host": "inference-pool",
            "subsets": [{"name": "nvidia", "labels": {"hardware": "ascend"}}],
        },
    }
    return [pool, other, *good_stack(0)]


class TestSubsetsAreLookedUpUnderTheirHost:
    """A subset name means nothing without its host: the same name under two hosts is two
    subsets (kills the mutant "the subset lookup ignores the destination host", whether it
    takes the first rule defining the name or every one)."""

    POOL = f"inference-pool.{NAMESPACE}.svc.cluster.local"

    def test_each_host_resolves_its_own_subset(self):
        view = StackView.of(stack_args(two_hosts_stack()).resources)
        assert view.subset_labels(self.POOL, "nvidia") == [{"hardware": "ascend"}]
        assert view.subset_labels(HOST, "nvidia") == [
            {"app": "inference-service", "hardware": "nvidia"}
        ]
        [to_nvidia, _to_ascend] = all_routes(view)
        assert [w.label for w in view.reach(to_nvidia).workloads] == [
            "Deployment inference/inference-blue"
        ]

    def test_the_split_s_nvidia_subset_stays_nvidia_beside_a_same_named_one(self):
        """0% by the main host's subsets passes although `nvidia` of inference-pool (listed
        first) selects the Ascend pods."""
        stack = two_hosts_stack()
        judged = [p for p in SHARE_POLICIES if p != "precision-verified-before-promotion"]
        for policy in (*judged, "route-weights-valid"):
            assert stack_violations(policy, stack, {"previousWeight": 0}) == [], policy
        assert shares(stack).most == 0
        # At 0% the NVIDIA image serves everything and is judged (issue 28): a subset name
        # that selects two workloads names no one NVIDIA image, so that check fails closed.
        [nvidia] = stack_violations(
            "precision-verified-before-promotion", stack, {"previousWeight": 0}
        )
        assert nvidia.startswith("cannot check the NVIDIA image with the Ascend weight at 0%: ")

    def test_a_route_to_the_other_host_s_nvidia_subset_is_ascend_traffic(self):
        """`nvidia` of inference-pool selects the Ascend pods: 100% there is a jump 0 -> 100."""
        stack = two_hosts_stack()
        http(stack).insert(0, {"name": "pool", "route": [dest("inference-pool", "nvidia")]})
        [jump] = stack_violations("no-unsafe-weight-jump", stack, {"previousWeight": 0})
        assert "raises the Ascend weight from 0% to 100%" in jump
        assert "route 'pool' sends it to Deployment inference/inference-green" in jump


def side_workload(name: str, labels: dict, image: str, accelerator: str = "nvidia"):
    """A Deployment `name` (1 pod of `accelerator`'s kind) with pod `labels`, and a Service
    `name` selecting them."""
    workload = deployment(accelerator, 1, image)
    workload["metadata"].update(name=name, labels=labels)
    workload["spec"]["selector"] = {"matchLabels": labels}
    workload["spec"]["template"]["metadata"]["labels"] = labels
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"selector": labels, "ports": [{"port": 8000}]},
    }
    return [workload, service]


def legacy() -> list[dict]:
    """A third, non-Ascend workload `legacy` some route may reach beside the two backends."""
    return side_workload("legacy", {"app": "legacy"}, "registry/legacy:v1")


LEGACY_HOST = f"legacy.{NAMESPACE}.svc.cluster.local"


class TestTheRollbackTarget:
    """rollback-capacity's NVIDIA backend: the workload behind the `nvidia` subset, else the
    one non-Ascend workload the routes reach; none or several cannot be judged."""

    def test_the_nvidia_subset_names_it_beside_another_workload(self):
        """A route to a legacy Service beside the split, the split listing Ascend first: the
        rollback lands on inference-blue (4 pods), not on the 1-pod legacy workload."""
        stack = [*good_stack(20), *legacy()]
        http(stack)[0]["route"].reverse()
        http(stack).insert(
            0,
            {
                "name": "legacy",
                "match": [{"uri": {"prefix": "/legacy"}}],
                "route": [dest(LEGACY_HOST)],
            },
        )
        assert stack_violations("rollback-capacity", stack) == []
        find(stack, "Deployment", "nvidia")["spec"]["replicas"] = 1
        assert stack_violations("rollback-capacity", stack) == [
            "Deployment inference/inference-blue has 1 replicas while Ascend takes 0%: NVIDIA "
            "must keep totalReplicas=4 pods (all traffic) until the weight is 100, so a "
            "rollback to 0% lands on a full pool; keep 4 replicas"
        ]

    def test_several_non_ascend_workloads_without_subsets_cannot_be_judged(self):
        stack = [*good_stack(20, router="gateway-api"), *legacy()]
        refs = find(stack, "HTTPRoute")["spec"]["rules"][0]["backendRefs"]
        refs.append({**backend_ref("nvidia", 0), "name": "legacy"})
        assert stack_violations("rollback-capacity", stack) == [
            "cannot check the rollback capacity while Ascend takes 20%: the routes reach "
            "several non-Ascend workloads: Deployment inference/inference-blue, Deployment "
            "inference/legacy"
        ]

    @pytest.mark.parametrize("router", ["istio", "gateway-api"])
    def test_no_nvidia_workload_cannot_be_judged(self, router):
        stack = good_stack(20, router=router)
        stack.remove(find(stack, "Deployment", "nvidia"))
        found = stack_violations("rollback-capacity", stack)
        assert found[-1] == (
            "cannot check the rollback capacity while Ascend takes 20%: no route reaches the "
            "pods of a workload other than Ascend (subset 'nvidia')"
        )


class TestTheAscendBackend:
    """image-pair-consistent finds the Ascend backend behind its subset (istio) or as the one
    Ascend workload the routes reach (gateway-api), and says why when it cannot."""

    @pytest.mark.parametrize(
        ("router", "why"),
        [
            ("istio", "no workload in the stack runs the pods of subset 'ascend'"),
            ("gateway-api", "no route reaches the pods of an Ascend workload"),
        ],
    )
    def test_no_ascend_workload(self, router, why):
        stack = good_stack(20, router=router)
        stack.remove(find(stack, "Deployment", "ascend"))
        assert stack_violations("image-pair-consistent", stack) == [
            f"cannot check the ascend image: {why}"
        ]

    def test_several_ascend_workloads_behind_the_routes(self):
        stack = [*good_stack(20, router="gateway-api"), *canary()]
        refs = find(stack, "HTTPRoute")["spec"]["rules"][0]["backendRefs"]
        refs.append({**backend_ref("ascend", 0), "name": "canary"})
        assert stack_violations("image-pair-consistent", stack) == [
            "cannot check the ascend image: the routes reach several Ascend workloads: "
            "Deployment inference/inference-green, Deployment inference/canary"
        ]


class TestWeightsThatSumToLittle:
    def test_weights_0_and_1_send_everything_to_ascend(self):
        stack = stack_at_5()
        http(stack)[0]["route"] = [dest(HOST, "nvidia", 0), dest(HOST, "ascend", 1)]
        [route] = shares(stack).routes
        assert route.shares == (0, 100)
        assert shares(stack).most == 100

    def test_weights_all_0_send_nothing_to_ascend(self):
        """Istio rejects the route; the share it would give Ascend is none."""
        stack = stack_at_5()
        http(stack)[0]["route"] = [dest(HOST, "nvidia", 0), dest(HOST, "ascend", 0)]
        [route] = shares(stack).routes
        assert route.shares == (0, 0)
        assert shares(stack).most == 0

    def test_unreadable_weights_are_reported_not_a_crash(self):
        """The capacity of an Ascend workload the route reaches is judged at 0% (its share is
        unknown; the weights are the violation)."""
        stack = good_stack(20)
        http(stack)[0]["route"][1]["weight"] = "abc"
        assert stack_violations("rollback-capacity", stack) == [
            "cannot check the capacity: VirtualService inference/inference-vs route 'split' has "
            f"weights {HOST} subset 'nvidia'=80.0, {HOST} subset 'ascend'='abc': not whole "
            "numbers >= 0, so its Ascend share cannot be judged"
        ]


def canary() -> list[dict]:
    """A second Ascend workload `canary` (its own Service, outside the `ascend` subset)."""
    labels = {"app": "inference-canary", "hardware": "ascend"}
    return side_workload("canary", labels, "registry/inference-service:v1.2.3-npu", "ascend")


def named(stack: list[dict], kind: str, name: str) -> dict:
    return next(o for o in stack if o["kind"] == kind and o["metadata"]["name"] == name)


CANARY_HOST = f"canary.{NAMESPACE}.svc.cluster.local"
UNKNOWN_HOST = f"elsewhere.{NAMESPACE}.svc.cluster.local"
"""A host no Service of the stack backs: its pods are unknown, so may be Ascend pods."""


class TestEveryDestinationCounts:
    @pytest.mark.parametrize("unknown_first", [False, True])
    def test_an_unknown_destination_adds_to_the_ascend_destinations(self, unknown_first):
        """20% to Ascend and 30% to pods the stack does not know: up to 50% on Ascend, in
        either order."""
        stack = stack_at_5()
        route = [dest(HOST, "ascend", 20), dest(UNKNOWN_HOST, None, 30)]
        http(stack)[0]["route"] = [
            *(route[::-1] if unknown_first else route),
            dest(HOST, "nvidia", 50),
        ]
        [split] = shares(stack).routes
        assert split.most == 50
        assert split.least == 20
        assert split.reached == "Deployment inference/inference-green, pods the stack does not know"

    def test_a_destination_with_weight_0_to_unknown_pods_sends_nothing(self):
        stack = good_stack(20)
        http(stack)[0]["route"] = [
            dest(HOST, "nvidia", 70),
            dest(HOST, "ascend", 30),
            dest(UNKNOWN_HOST, None, 0),
        ]
        assert stack_violations("ascend-weight-on-ladder", stack) == [
            "VirtualService inference/inference-vs route 'split' sends 30% to Ascend pods "
            "(Deployment inference/inference-green), which is not a ladder step (0, 5, 20, 50, "
            "80, 100); set ascendWeight to one of them"
        ]

    def test_each_ascend_workload_a_route_reaches_is_sized(self):
        """25% to the canary's Service: its 0 pods are too few, whatever the green ones do."""
        stack = [*good_stack(50), *canary()]
        http(stack)[0]["route"] = [
            dest(HOST, "nvidia", 50),
            dest(HOST, "ascend", 25),
            dest(CANARY_HOST, None, 25),
        ]
        find(stack, "Deployment", "ascend")["spec"]["replicas"] = 1
        named(stack, "Deployment", "canary")["spec"]["replicas"] = 0
        assert stack_violations("rollback-capacity", stack) == [
            "Deployment inference/canary has 0 replicas for 25% of traffic: at "
            "ascendCapacityRatio=1 its share of totalReplicas=4 needs at least 1; raise its "
            "replicas or lower the weight"
        ]

    def test_two_ascend_destinations_summing_to_100_let_nvidia_go(self):
        """50% to the green pods and 50% to the canary's: all of it surely on Ascend, so
        NVIDIA may scale to 0."""
        stack = [*good_stack(50), *canary()]
        http(stack)[0]["route"] = [dest(HOST, "ascend", 50), dest(CANARY_HOST, None, 50)]
        find(stack, "Deployment", "nvidia")["spec"]["replicas"] = 0
        named(stack, "Deployment", "canary")["spec"]["replicas"] = 2
        assert shares(stack).least == 100
        assert stack_violations("rollback-capacity", stack) == []

    def test_a_zero_share_is_reported_as_0_percent(self):
        stack = good_stack(0)
        find(stack, "Deployment", "nvidia")["spec"]["replicas"] = 1
        [message] = stack_violations("rollback-capacity", stack)
        assert message.startswith(
            "Deployment inference/inference-blue has 1 replicas while Ascend takes 0%: NVIDIA "
            "must keep totalReplicas=4 pods"
        )
