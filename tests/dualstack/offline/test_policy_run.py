"""The offline bridge: rendered objects -> engine-shaped args -> policy results."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

from dualstack.offline.policy_run import (
    engine_value,
    policy_resources,
    report_lines,
    run_policies,
    type_token,
)
from policies import POLICIES
from tests.conftest import cfg
from tests.support.policy_objects import JUDGED, good_stack, virtual_service

JUMP = {**JUDGED, "no-unsafe-weight-jump": {"previousWeight": 5}}


def by_policy(results):
    found: dict[str, list] = {}
    for result in results:
        found.setdefault(result.policy, []).append(result)
    return found


@pytest.mark.parametrize(
    ("api_version", "kind", "token"),
    [
        ("apps/v1", "Deployment", "kubernetes:apps/v1:Deployment"),
        ("v1", "Service", "kubernetes:core/v1:Service"),
        ("v1", "Node", "kubernetes:core/v1:NodePatch"),
        (
            "networking.istio.io/v1",
            "VirtualService",
            "kubernetes:networking.istio.io/v1:VirtualService",
        ),
        ("policy/v1", "PodDisruptionBudget", "kubernetes:policy/v1:PodDisruptionBudget"),
    ],
)
def test_type_tokens_are_those_the_program_registers(api_version, kind, token):
    assert type_token({"apiVersion": api_version, "kind": kind}) == token


def test_props_arrive_as_the_engine_sends_them():
    [resource] = policy_resources([good_stack(20)[0]], stack="prod")
    replicas = resource.props["spec"]["replicas"]
    assert replicas == 4.0 and isinstance(replicas, float)
    token = "kubernetes:apps/v1:Deployment"
    assert (
        resource.urn == f"urn:pulumi:prod::dualstack-inference::{token}::inference/inference-blue"
    )
    assert not isinstance(resource.props, dict)  # a read-only proxy, like the engine's
    assert engine_value({"a": [1, True, None, "x"]}) == {"a": [1.0, True, None, "x"]}


def test_rendered_prod_stack_passes_with_advisories_only(render_objects):
    objects = render_objects(
        cfg(ascendWeight="20", verifiedAscendImage="registry/inference-service:v1.2.3-npu")
    )
    results = by_policy(run_policies(objects, JUMP))
    assert len(results) == len(POLICIES)
    [advisory] = results.pop("accelerator-driver-hostpath")
    assert (
        advisory.outcome == "advisory"
        and advisory.resource == "Deployment inference/inference-green"
    )
    tag_pinned = results.pop("images-pinned-by-digest")
    assert {r.outcome for r in tag_pinned} == {"advisory"}
    [job] = [o["metadata"]["name"] for o in objects if o["kind"] == "Job"]
    assert sorted(r.resource for r in tag_pinned) == [
        "Deployment inference/inference-blue",
        "Deployment inference/inference-green",
        f"Job inference/{job}",
    ]
    assert {name: [r.outcome for r in rs] for name, rs in results.items()} == {
        name: ["pass"] for name in results
    }


def test_a_violation_names_policy_level_and_resource():
    results = run_policies(good_stack(80), JUMP)
    [violation] = [r for r in results if r.outcome == "violation"]
    assert violation.policy == "no-unsafe-weight-jump"
    assert violation.enforcement == "mandatory"
    assert violation.resource == "VirtualService inference/inference-vs"
    assert violation.blocking


def test_stack_policy_violation_names_the_resource_it_reports():
    stack = good_stack(50)
    stack[0]["spec"]["replicas"] = 2
    [violation] = [
        r
        for r in run_policies(stack, JUMP | {"no-unsafe-weight-jump": {"previousWeight": 20}})
        if r.outcome == "violation"
    ]
    assert violation.policy == "rollback-capacity"
    assert violation.resource == "Deployment inference/inference-blue"


@pytest.mark.parametrize(
    ("config", "outcome"),
    [
        ({"all": "advisory"}, "advisory"),
        ({"all": {"enforcementLevel": "advisory"}}, "advisory"),
        ({"no-unsafe-weight-jump": {"enforcementLevel": "advisory"}}, "advisory"),
        ({"all": "advisory", "no-unsafe-weight-jump": "mandatory"}, "violation"),
        ({"no-unsafe-weight-jump": "disabled"}, "disabled"),
        ({"no-unsafe-weight-jump": {"enforcementLevel": "remediate"}}, "violation"),
    ],
)
def test_enforcement_levels_from_config(config, outcome):
    results = by_policy(run_policies(good_stack(80), config))
    assert [r.outcome for r in results["no-unsafe-weight-jump"]] == [outcome]


def test_not_applicable_is_a_pass_with_the_reason():
    stack = [o for o in good_stack(20) if o["kind"] != "VirtualService"]
    [result] = by_policy(run_policies(stack))["rollback-capacity"]
    assert result.outcome == "pass"
    assert result.message == "not applicable: no VirtualService or HTTPRoute routes traffic"


def test_a_crashing_policy_is_a_violation():
    def broken(args, report):
        raise KeyError("spec")

    policy = StackValidationPolicy("broken", "always crashes", broken, EnforcementLevel.ADVISORY)
    [result] = run_policies(good_stack(20), {}, policies=[policy])
    assert result.outcome == "violation"
    assert result.message == "the policy crashed (KeyError: 'spec'); treated as a violation"


def test_an_unknown_value_makes_the_policy_advisory_for_the_run():
    def reads_image(args, report):
        args.props["spec"]["template"]["spec"]["containers"][0]["image"]

    policy = ResourceValidationPolicy("reads-image", "reads images", reads_image)
    stack = good_stack(20)
    stack[0]["spec"]["template"]["spec"]["containers"][0]["image"] = UNKNOWN_STRING_VALUE
    results = run_policies(stack[:1], {}, policies=[policy])
    assert [(r.outcome, r.message) for r in results] == [
        (
            "advisory",
            "string value at .spec.template.spec.containers.0.image can't be known during preview",
        )
    ]
    with pytest.raises(UnknownValueError):
        policy_resources(stack[:1])[0].props["spec"]["template"]["spec"]["containers"][0]["image"]


def test_config_numbers_reach_policies_as_floats():
    seen = []

    def record(args, report):
        seen.append(dict(args.get_config()))

    policy = StackValidationPolicy("record", "records config", record)
    run_policies(
        [],
        {"record": {"previousWeight": 5, "ladder": [0, 100], "enforcementLevel": "advisory"}},
        policies=[policy],
    )
    assert seen == [{"previousWeight": 5.0, "ladder": [0.0, 100.0]}]
    assert isinstance(seen[0]["previousWeight"], float)


def test_report_lines_lead_with_failures():
    results = run_policies([*good_stack(80), virtual_service(80)], JUMP)
    lines = report_lines(results, "previous weight 5%")
    assert lines[0].startswith(
        "Policies (dualstack-migration, previous weight 5%): 2 violations, 3 advisories, "
    )
    assert lines[1].startswith(
        "  FAIL no-unsafe-weight-jump [mandatory]: VirtualService inference/inference-vs raises"
    )
    assert lines[-1].startswith("  ok   ")
