"""The services of a fleet stack as the stack policies see them (`policies.members`): whose
objects are whose, each service's config, and `per_service` running a validator once per
service and reporting each violation once, naming the services that report it."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import StackValidationArgs
from pulumi_policy.policy import _NotApplicableError

from policies.common import ConfigError
from policies.members import members, per_service, service_of, services_config
from tests.support.policy_objects import stack_args


def labelled(name: str, **labels: Any) -> dict[str, Any]:
    """A ConfigMap carrying `labels` (the objects' service is read from labels alone)."""
    metadata = {"name": name, "namespace": "inference", "labels": labels}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


POOL = labelled("pool-patch")  # no service label: shared by the whole stack
CHAT = labelled("chat-blue", app="chat")
CHAT_CHECK = labelled("chat-precision", **{"app.kubernetes.io/part-of": "chat"})
EMBEDDER = labelled("embedder-blue", app="embedder")


def names(resources) -> list[str]:
    return [resource.name for resource in resources]


def resources_of(*objects: dict[str, Any]) -> list[Any]:
    return stack_args(list(objects)).resources


@pytest.mark.parametrize(
    ("labels", "service"),
    [
        ({"app": "chat"}, "chat"),
        ({"app.kubernetes.io/part-of": "chat"}, "chat"),
        ({"app": "chat", "app.kubernetes.io/part-of": "other"}, "chat"),
        ({"app": "", "app.kubernetes.io/part-of": "chat"}, "chat"),
        ({}, None),
        ({"app": 5}, None),
    ],
)
def test_an_object_belongs_to_the_service_its_labels_name(labels, service) -> None:
    [resource] = resources_of(labelled("x", **labels))
    assert service_of(resource) == service


def test_services_facts_are_read_by_name() -> None:
    assert services_config({"previousWeight": 5}) is None
    assert services_config({"services": {"chat": {"previousWeight": 20}}}) == {
        "chat": {"previousWeight": 20}
    }


@pytest.mark.parametrize("raw", [["chat"], {"chat": 20}, "chat"])
def test_malformed_services_facts_are_a_config_error(raw) -> None:
    with pytest.raises(ConfigError) as raised:
        services_config({"services": raw})
    assert str(raised.value) == f"services = {raw!r} is not a map of service name -> facts"


def test_a_stack_without_services_is_one_unnamed_member_with_everything() -> None:
    config = {"previousWeight": 5}
    [member] = members(resources_of(POOL, CHAT), config)
    assert (member.name, names(member.resources), member.config) == (
        None,
        ["pool-patch", "chat-blue"],
        config,
    )


def test_each_service_gets_its_objects_the_shared_ones_and_its_facts_over_the_stack_s() -> None:
    """Services with facts first (their order), then any other service the objects name; a
    service's facts override the stack's config for it, and `services` itself is dropped."""
    config = {
        "previousWeight": 5,
        "ladder": [0, 5, 100],
        "services": {"embedder": {"previousWeight": 20}, "chat": {}, "gone": {}},
    }
    objects = resources_of(CHAT, POOL, labelled("reranker-blue", app="reranker"), EMBEDDER)
    found = [(m.name, names(m.resources), m.config) for m in members(objects, config)]
    ladder = [0, 5, 100]
    assert found == [
        ("embedder", ["pool-patch", "embedder-blue"], {"previousWeight": 20, "ladder": ladder}),
        ("chat", ["pool-patch", "chat-blue"], {"previousWeight": 5, "ladder": ladder}),
        ("reranker", ["pool-patch", "reranker-blue"], {"previousWeight": 5, "ladder": ladder}),
    ]  # "gone" has facts but no objects: no member


def test_the_precision_check_s_objects_belong_to_their_service() -> None:
    config = {"services": {"chat": {}}}
    [member] = members(resources_of(CHAT, CHAT_CHECK), config)
    assert names(member.resources) == ["chat-blue", "chat-precision"]


Reports = dict[str | None, list[tuple[str, str | None]]]


def recording(reports: Reports, skip: set[str] = frozenset()):
    """A validator that reports, for each service, the messages `reports` lists under its
    `app` label (None: an object without one), and is not applicable for services in `skip`."""

    @per_service
    def validator(args: StackValidationArgs, report_violation) -> None:
        apps = {resource.props["metadata"]["labels"].get("app") for resource in args.resources}
        service = next((app for app in apps if app), None)
        if service in skip:
            args.not_applicable(f"nothing for {service}")
        for message, urn in reports.get(service, []):
            report_violation(message, urn)

    return validator


def run(validator, objects: list[dict[str, Any]], config: dict[str, Any]):
    found: list[tuple[str, str | None]] = []
    validator(stack_args(objects, config), lambda message, urn=None: found.append((message, urn)))
    return found


FLEET = {"services": {"chat": {}, "embedder": {}, "reranker": {}}}
OBJECTS = [POOL, CHAT, EMBEDDER, labelled("reranker-blue", app="reranker")]


def test_a_single_service_stack_is_judged_once_as_before() -> None:
    validator = recording({"chat": [("too few pods", "urn:x")]})
    assert run(validator, [POOL, CHAT], {"previousWeight": 5}) == [("too few pods", "urn:x")]


def test_a_violation_names_the_services_that_report_it() -> None:
    validator = recording(
        {
            "chat": [("too few pods", "urn:chat"), ("unverified image", None)],
            "embedder": [("unverified image", None)],
        }
    )
    assert run(validator, OBJECTS, FLEET) == [
        ("service chat: too few pods", "urn:chat"),
        ("services chat, embedder: unverified image", None),
    ]


def test_the_same_message_on_another_object_is_reported_apart() -> None:
    validator = recording({"chat": [("no budget", "urn:a")], "embedder": [("no budget", "urn:b")]})
    assert run(validator, OBJECTS, FLEET) == [
        ("service chat: no budget", "urn:a"),
        ("service embedder: no budget", "urn:b"),
    ]


def test_a_violation_every_service_reports_is_the_stack_s_reported_once() -> None:
    envelope = [("capacity.totalReplicas: 4 -> 2: needs the owners", None)]
    validator = recording({name: envelope for name in ("chat", "embedder", "reranker")})
    assert run(validator, OBJECTS, FLEET) == envelope


def test_a_fleet_of_one_declared_service_still_names_it() -> None:
    validator = recording({"chat": [("too few pods", None)]})
    assert run(validator, [POOL, CHAT], {"services": {"chat": {}}}) == [
        ("service chat: too few pods", None)
    ]


def test_not_applicable_only_when_it_is_for_every_service() -> None:
    everyone = {"chat", "embedder", "reranker"}
    with pytest.raises(_NotApplicableError):
        run(recording({}, skip=everyone), OBJECTS, FLEET)
    assert run(recording({}, skip={"chat", "embedder"}), OBJECTS, FLEET) == []
    validator = recording({"reranker": [("too few pods", None)]}, skip={"chat", "embedder"})
    assert run(validator, OBJECTS, FLEET) == [("service reranker: too few pods", None)]


def test_malformed_services_facts_are_one_violation() -> None:
    assert run(recording({}), OBJECTS, {"services": ["chat"]}) == [
        (
            "policy config services = ['chat'] is not a map of service name -> facts; "
            "regenerate it with `dualstack policy-config`",
            None,
        )
    ]


def test_each_service_is_judged_with_its_own_facts() -> None:
    seen: list[tuple[list[str], Any]] = []

    @per_service
    def validator(args: StackValidationArgs, report_violation) -> None:
        seen.append((names(args.resources), args.get_config().get("previousWeight")))

    config = {"previousWeight": 5, "services": {"chat": {"previousWeight": 20}, "embedder": {}}}
    run(validator, [POOL, CHAT, EMBEDDER], config)
    assert seen == [(["pool-patch", "chat-blue"], 20), (["pool-patch", "embedder-blue"], 5)]


def test_an_object_without_props_belongs_to_no_service() -> None:
    """What the engine hands over is read defensively: no props, no labels, shared."""
    assert service_of(object()) is None
