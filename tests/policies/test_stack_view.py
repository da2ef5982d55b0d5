"""`policies.stack_view`: how the stack policies index a stack and resolve where a route, a
subset or a Service sends traffic (Istio and Kubernetes facts in the module docstring).

Hand-built objects (`tests.support.policy_objects`) as the engine sends them, one part changed
at a time; the expected workloads and messages are written out.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from policies.routers import all_routes
from policies.stack_view import Reach, StackView, container_images, fqdn, rule_host
from tests.support.policy_objects import (
    HOST,
    NVIDIA_IMAGE,
    TOKENS,
    deployment,
    destination_rule,
    find,
    good_stack,
    stack_args,
    urn,
)

BLUE = "Deployment inference/inference-blue"
GREEN = "Deployment inference/inference-green"


def view_of(objects: list[dict[str, Any]]) -> StackView:
    return StackView.of(stack_args(objects).resources)


def labels_of(workloads) -> list[str]:
    return [w.label for w in workloads]


def workload(name: str, labels: dict[str, str], namespace: str | None = "inference") -> dict:
    """A one-pod Deployment `name` whose pods carry `labels` (no namespace when None)."""
    obj = deployment("nvidia", 1, NVIDIA_IMAGE)
    obj["metadata"] = {"name": name, "labels": labels}
    if namespace is not None:
        obj["metadata"]["namespace"] = namespace
    obj["spec"]["selector"] = {"matchLabels": labels}
    obj["spec"]["template"]["metadata"]["labels"] = labels
    return obj


def canary_stack() -> list[dict[str, Any]]:
    """`good_stack(20, 2)` with a second Ascend Deployment `canary-green` (listed after
    inference-green) whose pods the `ascend` subset and the Service select too."""
    canary = workload(
        "canary-green", {"app": "inference-service", "hardware": "ascend", "version": "canary"}
    )
    stack = good_stack(20, 2)
    return [*stack[:2], canary, *stack[2:]]


class TestIndexing:
    def test_each_resource_is_kept_with_its_type_urn_kind_namespace_and_label(self):
        stack = good_stack(20, 2)
        view = view_of(stack)
        blue = view.workloads[0]
        assert (blue.resource_type, blue.urn, blue.kind, blue.namespace, blue.label) == (
            "kubernetes:apps/v1:Deployment",
            "urn:pulumi:test::dualstack-inference::kubernetes:apps/v1:Deployment::inference-blue",
            "Deployment",
            "inference",
            BLUE,
        )
        [rule] = view.destination_rules
        assert (rule.resource_type, rule.kind, rule.label) == (
            TOKENS["DestinationRule"],
            "DestinationRule",
            "DestinationRule inference/inference-dr",
        )
        assert labels_of(view.workloads) == [BLUE, GREEN]
        assert labels_of(view.services) == ["Service inference/inference-service"]
        assert labels_of(view.virtual_services) == ["VirtualService inference/inference-vs"]
        assert view.http_routes == []

    @pytest.mark.parametrize(
        ("host", "namespace", "expected"),
        [
            ("inference-service", "inference", HOST),
            ("inference-service", "", "inference-service.default.svc.cluster.local"),
            (
                "inference-service.serving",
                "inference",
                "inference-service.serving.svc.cluster.local",
            ),
            (
                "inference-service.serving.svc.cluster.local",
                "inference",
                "inference-service.serving.svc.cluster.local",
            ),
            ("api.example.com", "inference", "api.example.com"),
        ],
    )
    def test_a_host_is_qualified_as_istio_reads_a_short_name(self, host, namespace, expected):
        """No dot: a Service of the rule's namespace; one dot: `<service>.<namespace>`; more
        dots: already qualified (an external host stays as written)."""
        assert fqdn(host, namespace) == expected

    def test_a_destination_rule_without_a_host_names_the_empty_service_of_its_namespace(self):
        rule = copy.deepcopy(destination_rule())
        del rule["spec"]["host"]
        [item] = view_of([rule]).destination_rules
        assert rule_host(item) == ".inference.svc.cluster.local"

    def test_container_images_name_each_app_container_and_a_nameless_one_as_a_question_mark(
        self,
    ):
        stack = good_stack(20, 2)
        blue = find(stack, "Deployment", "nvidia")
        pod = blue["spec"]["template"]["spec"]
        pod["initContainers"] = [{"name": "fetch-model", "image": "registry/fetch:1"}]
        pod["containers"].append({"image": "registry/sidecar:2"})
        assert container_images(view_of(stack).workloads[0]) == [
            ("inference", NVIDIA_IMAGE),
            ("?", "registry/sidecar:2"),
        ]


class TestServiceEndpoints:
    @pytest.mark.parametrize(
        ("kind", "endpoints"),
        [(None, [BLUE, GREEN]), ("ClusterIP", [BLUE, GREEN]), ("ExternalName", [])],
    )
    def test_an_external_name_service_has_no_pod_endpoints_whatever_its_selector(
        self, kind, endpoints
    ):
        stack = good_stack(20, 2)
        if kind is not None:
            find(stack, "Service")["spec"]["type"] = kind
        view = view_of(stack)
        [svc] = view.services
        assert labels_of(view.service_pods(svc)) == endpoints

    def test_a_route_to_an_external_name_service_reaches_no_pod(self):
        stack = good_stack(20, 2)
        find(stack, "Service")["spec"].update(type="ExternalName", externalName="api.example")
        view = view_of(stack)
        to_nvidia = all_routes(view)[0]
        assert view.reach(to_nvidia) == Reach(
            to_nvidia,
            (),
            "Service inference/inference-service selects no pod of any workload in the stack "
            "(503 UH no_healthy_upstream); make its selector match a pod template",
        )

    @pytest.mark.parametrize(
        ("workload_namespace", "asked", "selected"),
        [
            (None, "default", ["Deployment solo"]),
            (None, "", ["Deployment solo"]),
            ("default", "", ["Deployment default/solo"]),
            ("default", "default", ["Deployment default/solo"]),
            ("inference", "", []),
            (None, "inference", []),
        ],
    )
    def test_without_a_service_a_missing_namespace_is_default_on_either_side(
        self, workload_namespace, asked, selected
    ):
        view = view_of([workload("solo", {"app": "solo"}, workload_namespace)])
        assert labels_of(view.selected_workloads(asked, {"app": "solo"})) == selected


class TestSubsets:
    def test_a_route_to_a_subset_no_rule_defines_reaches_nothing_and_says_so(self):
        stack = good_stack(20, 2)
        find(stack, "VirtualService")["spec"]["http"][0]["route"][1]["destination"]["subset"] = (
            "npu"
        )
        view = view_of(stack)
        to_npu = all_routes(view)[1]
        assert view.reach(to_npu) == Reach(
            to_npu,
            (),
            f"subset 'npu' of {HOST}, which no DestinationRule in the stack defines (503 for "
            "that share); define the subset or fix the route",
        )

    def test_a_subset_reaches_every_workload_whose_pods_it_selects(self):
        view = view_of(canary_stack())
        to_ascend = all_routes(view)[1]
        assert to_ascend.subset == "ascend"
        assert labels_of(view.reach(to_ascend).workloads) == [
            GREEN,
            "Deployment inference/canary-green",
        ]

    def test_a_subset_s_backends_are_every_workload_it_selects_once(self):
        """A second rule of the same host defining `ascend` again adds no duplicate."""
        again = destination_rule()
        again["metadata"]["name"] = "inference-dr-again"
        view = view_of([*canary_stack(), again])
        assert labels_of(view.backends("ascend")) == [GREEN, "Deployment inference/canary-green"]

    def test_one_backend_is_returned_without_a_reason(self):
        view = view_of(good_stack(20, 2))
        assert view.backend("ascend") == (view.workloads[1], "")
        assert view.backend("ascend")[0].label == GREEN

    def test_several_backends_are_refused_naming_each_in_sorted_order(self):
        view = view_of(canary_stack())
        assert view.backend("ascend") == (
            None,
            "subset 'ascend' selects the pods of several workloads: "
            "Deployment inference/canary-green, Deployment inference/inference-green",
        )

    def test_no_backend_is_refused(self):
        view = view_of(good_stack(20, 2))
        assert view.backend("tpu") == (
            None,
            "no workload in the stack runs the pods of subset 'tpu'",
        )

    def test_a_subset_s_backends_are_among_its_host_s_endpoints_only(self):
        """The subset selects by `hardware` alone; a batch Deployment in the namespace carries
        `hardware: ascend` but is no endpoint of the rule's host (the Service selects
        `app: inference-service`): it is no backend."""
        stack = good_stack(20, 2)
        rule = find(stack, "DestinationRule")
        rule["spec"]["subsets"][1]["labels"] = {"hardware": "ascend"}
        batch = workload("ascend-batch", {"app": "batch", "hardware": "ascend"})
        view = view_of([*stack, batch])
        assert labels_of(view.backends("ascend")) == [GREEN]
        assert view.backend("ascend") == (view.workloads[1], "")

    def test_a_rule_whose_host_is_no_service_finds_its_subset_in_its_own_namespace(self):
        """No Service of the host: the subset's labels are looked up among the workloads of
        the DestinationRule's namespace (`inference`, not `default`)."""
        stack = [
            obj for obj in good_stack(20, 2) if obj["kind"] not in ("Service", "VirtualService")
        ]
        find(stack, "DestinationRule")["spec"]["host"] = "inference-service"
        assert labels_of(view_of(stack).backends("ascend")) == [GREEN]


class CountingProps(Mapping):
    """Props that count how often the policies read them (the engine's proxies are slow)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.reads = 0

    def __getitem__(self, key: str) -> Any:
        self.reads += 1
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def counted_view(kind: str) -> tuple[StackView, CountingProps]:
    """The view of `good_stack(20, 2)` with the props of its one `kind` object counted."""
    resources, counted = [], None
    for obj in good_stack(20, 2):
        props: Mapping[str, Any] = obj
        if obj["kind"] == kind:
            props = counted = CountingProps(obj)
        resources.append(
            SimpleNamespace(resource_type=TOKENS[obj["kind"]], props=props, urn=urn(obj))
        )
    assert counted is not None
    return StackView.of(resources), counted


class TestReadOncePerView:
    """A fleet's views are asked the same hosts and Services for every route: each answer is
    worked out once per view, reading the props once."""

    def test_a_host_s_service_is_looked_up_once(self):
        view, props = counted_view("Service")
        indexed = props.reads
        assert view.service(HOST) is view.services[0]
        first = props.reads
        assert view.service(HOST) is view.services[0]
        assert props.reads == first > indexed

    def test_a_service_s_endpoints_are_worked_out_once(self):
        view, props = counted_view("Service")
        [svc] = view.services
        indexed = props.reads
        assert labels_of(view.service_pods(svc)) == [BLUE, GREEN]
        first = props.reads
        assert labels_of(view.service_pods(svc)) == [BLUE, GREEN]
        assert props.reads == first > indexed

    def test_the_destination_rules_are_read_once(self):
        view, props = counted_view("DestinationRule")
        indexed = props.reads
        ascend = {"app": "inference-service", "hardware": "ascend"}
        assert view.subset_labels(HOST, "ascend") == [ascend]
        first = props.reads
        assert view.subset_labels(HOST, "ascend") == [ascend]
        assert view.subset_labels(HOST, "nvidia") == [
            {"app": "inference-service", "hardware": "nvidia"}
        ]
        assert props.reads == first > indexed
