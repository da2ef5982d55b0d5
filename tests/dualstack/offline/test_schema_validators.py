"""One strict validator per built-in kind, built once per process (issue 29): as strict as
kubernetes-validate itself, which builds a registry and a validator for every object.

kubernetes-validate's own `validate(obj, version, strict=True)` is the oracle: every object of
a render, valid and broken in several ways, is judged by both, and the first error (its path
and message) is the same.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import kubernetes_validate
import pytest

from dualstack.offline.render import render_fleet
from dualstack.offline.schemas import (
    DEFINITIONS_REF,
    KUBERNETES_VERSION,
    core_validator,
    inline_definitions,
    is_core,
    object_errors,
    validate_objects,
)
from tests.conftest import cfg, find, fixture_config
from tests.support.fleets import fleet


def library_errors(obj: dict[str, Any]) -> list[str]:
    """kubernetes-validate's verdict on `obj`, as `object_errors` words it."""
    try:
        kubernetes_validate.validate(copy.deepcopy(obj), KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'.'.join(str(p) for p in exc.path) or '(root)'}: {exc.message}"]
    return []


@pytest.fixture(scope="module")
def prod_objects() -> list[dict[str, Any]]:
    return render_fleet(fixture_config("prod"), "prod")[1]


def _broken(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    deployment = copy.deepcopy(find(objects, "Deployment", "inference-blue"))
    misspelt = copy.deepcopy(deployment)
    misspelt["spec"]["replica"] = misspelt["spec"].pop("replicas")
    wrong_type = copy.deepcopy(deployment)
    wrong_type["spec"]["replicas"] = "four"
    no_containers = copy.deepcopy(deployment)
    del no_containers["spec"]["template"]["spec"]["containers"]
    bad_port = copy.deepcopy(find(objects, "Service", "inference-service"))
    bad_port["spec"]["ports"][0]["port"] = "http"
    extra_top = copy.deepcopy(find(objects, "ServiceAccount", "inference-blue"))
    extra_top["automountToken"] = False
    config_map = copy.deepcopy(next(o for o in objects if o["kind"] == "ConfigMap"))
    config_map["data"] = {"n": 1}
    policy = copy.deepcopy(next(o for o in objects if o["kind"] == "NetworkPolicy"))
    policy["spec"]["policyTypes"] = "Ingress"
    job = copy.deepcopy(next(o for o in objects if o["kind"] == "Job"))
    job["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privileged"] = "no"
    node = copy.deepcopy(next(o for o in objects if o["kind"] == "Node"))
    node["spec"]["taints"][0]["effect"] = 1
    return {
        "misspelt field": misspelt,
        "string replicas": wrong_type,
        "no containers": no_containers,
        "named port number": bad_port,
        "unknown top-level field": extra_top,
        "number in ConfigMap data": config_map,
        "policyTypes not a list": policy,
        "privileged a string": job,
        "taint effect a number": node,
    }


def test_every_rendered_core_object_is_judged_as_kubernetes_validate_judges_it(
    prod_objects,
) -> None:
    core = [o for o in prod_objects if is_core(o)]
    assert {o["kind"] for o in core} >= {"Deployment", "Service", "ConfigMap", "Job", "Node"}
    for obj in core:
        assert object_errors(obj) == library_errors(obj) == [], obj["kind"]


@pytest.mark.parametrize(
    "case",
    [
        "misspelt field",
        "string replicas",
        "no containers",
        "named port number",
        "unknown top-level field",
        "number in ConfigMap data",
        "policyTypes not a list",
        "privileged a string",
        "taint effect a number",
    ],
)
def test_a_broken_object_fails_with_kubernetes_validates_first_error(prod_objects, case) -> None:
    obj = _broken(prod_objects)[case]
    expected = library_errors(obj)
    assert expected, "the case must be invalid for kubernetes-validate"
    assert object_errors(obj) == expected


def test_one_validator_per_kind_for_the_whole_process() -> None:
    _, objects = render_fleet(cfg(**fleet(10)), "fleet10")
    kinds = {(o["apiVersion"], o["kind"]) for o in objects if is_core(o)}
    core_validator.cache_clear()
    validate_objects(objects)
    assert core_validator.cache_info().misses == len(kinds)
    assert core_validator.cache_info().hits == sum(1 for o in objects if is_core(o)) - len(kinds)
    validate_objects(objects)
    assert core_validator.cache_info().misses == len(kinds)


def test_definitions_are_inlined_except_a_definition_that_contains_itself() -> None:
    definitions = {
        "Tree": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Tree"}}},
        "Name": {"type": "string"},
    }
    schema = {
        "properties": {
            "name": {"$ref": f"{DEFINITIONS_REF}Name", "description": "its name"},
            "tree": {"$ref": f"{DEFINITIONS_REF}Tree"},
            "typed": {"$ref": f"{DEFINITIONS_REF}Name", "type": "string"},  # not annotations
        }
    }
    inlined = inline_definitions(schema, definitions)["properties"]
    assert inlined["name"] == {"type": "string"}
    assert inlined["tree"] == {
        "type": "object",
        "properties": {"child": {"$ref": f"{DEFINITIONS_REF}Tree"}},  # resolvable from the kind
    }
    assert inlined["typed"] == {"$ref": f"{DEFINITIONS_REF}Name", "type": "string"}


def test_a_deployment_is_validated_without_following_a_reference() -> None:
    schema = core_validator("apps/v1", "Deployment").schema
    assert "$ref" not in json.dumps(schema)
    assert "additionalProperties" in json.dumps(schema["properties"]["spec"])
