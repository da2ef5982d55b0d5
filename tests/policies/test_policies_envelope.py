"""safety-envelope-unchanged over hand-built stacks under both routers (VirtualService +
DestinationRule, HTTPRoute to the direct Services): the owners' approval, decreases, raises."""

from __future__ import annotations

import pytest

from tests.support.policy_objects import (
    ASCEND_IMAGE,
    NVIDIA_IMAGE,
    ROUTERS,
    find,
    stack_violations,
)
from tests.support.policy_objects import good_stack as stack_of

CHANGE = {"fact": "capacity.totalReplicas", "before": "4", "after": "1", "kind": "config"}
FILE = {"fact": "policies/traffic.py", "before": "at base", "after": "modified", "kind": "file"}
IMAGES = {"nvidia": NVIDIA_IMAGE, "ascend": ASCEND_IMAGE}


@pytest.fixture(params=ROUTERS, autouse=True)
def router(request) -> str:
    return request.param


@pytest.fixture
def good_stack(router):
    """`good_stack(weight)` under the test's router."""
    return lambda weight: stack_of(weight, router=router)


def envelope(objects, **config):
    return stack_violations("safety-envelope-unchanged", objects, config)


def test_no_change_passes(good_stack):
    assert envelope(good_stack(20), envelopeChanges=[], previousWeight=5) == []


def test_without_the_judge_s_facts_it_fails_closed(good_stack):
    [message] = envelope(good_stack(20), previousWeight=20)
    assert message == (
        "policy config envelopeChanges is absent: the base's judge did not write this config, "
        "so the envelope cannot be checked; regenerate it with `dualstack policy-config`"
    )


def test_each_unapproved_change_is_one_violation_naming_the_fact(good_stack):
    found = envelope(good_stack(20), envelopeChanges=[CHANGE, FILE], previousWeight=20)
    assert [message.split(": a change")[0] for message in found] == [
        "capacity.totalReplicas: 4 -> 1",
        "file policies/traffic.py: at base -> modified",
    ]
    assert "needs an owner's approval (a CODEOWNERS review on GitHub" in found[0]


@pytest.mark.parametrize(("previous", "weight"), [(50, 20), (100, 0), (20, 5)])
def test_a_decrease_alone_is_never_blocked(good_stack, previous, weight):
    assert envelope(good_stack(weight), envelopeChanges=[], previousWeight=previous) == []


@pytest.mark.parametrize(("previous", "weight"), [(50, 20), (100, 0), (20, 5)])
def test_an_approved_change_with_a_decrease_passes(good_stack, previous, weight):
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": IMAGES}
    assert envelope(good_stack(weight), previousWeight=previous, **config) == []


def test_a_decrease_does_not_carry_an_unapproved_change(good_stack):
    """20 -> 5 with the ladder widened would land unapproved and judge 5 -> 100 next."""
    ladder = {"fact": "ladder", "before": "[0, 5, 20, 50, 80, 100]", "after": "[0, 5, 100]"}
    [message] = envelope(good_stack(5), envelopeChanges=[ladder], previousWeight=20)
    assert message.startswith(
        "ladder: [0, 5, 20, 50, 80, 100] -> [0, 5, 100]: a change of the safety envelope"
    )
    assert message.endswith(
        "or split it from the migration step (a weight decrease alone always passes)"
    )


def test_an_approved_change_without_a_move_passes(good_stack):
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": IMAGES}
    assert envelope(good_stack(20), previousWeight=20, **config) == []


def test_an_approved_change_with_a_raise_fails(good_stack):
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": IMAGES}
    [message] = envelope(good_stack(50), previousWeight=20, **config)
    assert message.startswith(
        "the owners approved envelope changes (capacity.totalReplicas: 4 -> 1), but the same "
        "pull request raises the Ascend weight from 20% to 50%: land the envelope change first"
    )


def test_an_approved_change_with_a_new_image_fails(good_stack):
    stack = good_stack(20)
    container = find(stack, "Deployment", "nvidia")["spec"]["template"]["spec"]["containers"][0]
    container["image"] = "registry/inference-service:v1.2.4-cuda"
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": IMAGES}
    [message] = envelope(stack, previousWeight=20, **config)
    assert f"changes the nvidia image {NVIDIA_IMAGE} -> registry/inference-service:v1.2.4-cuda" in (
        message
    )


@pytest.mark.parametrize(("previous", "weight"), [(20, 5), (50, 0)])
def test_an_approved_decrease_may_not_change_an_image(good_stack, previous, weight):
    """Issue 28: 20 -> 5 approved for another change may not swap the NVIDIA image too."""
    stack = good_stack(weight)
    container = find(stack, "Deployment", "nvidia")["spec"]["template"]["spec"]["containers"][0]
    container["image"] = "evil.example/inference-service:v1.2.3-cuda"
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": IMAGES}
    [message] = envelope(stack, previousWeight=previous, **config)
    assert message == (
        "the owners approved envelope changes (capacity.totalReplicas: 4 -> 1), but the same "
        f"pull request changes the nvidia image {NVIDIA_IMAGE} -> "
        "evil.example/inference-service:v1.2.3-cuda: land the envelope change first, then the "
        "step in its own pull request"
    )


def test_an_approved_first_deploy_may_start_at_zero_only(good_stack):
    new_stack = [{**CHANGE, "fact": "Pulumi.canary.yaml", "kind": "stack"}]
    assert envelope(good_stack(0), envelopeChanges=new_stack, ownerApproved=True) == []
    [message] = envelope(good_stack(5), envelopeChanges=new_stack, ownerApproved=True)
    assert "raises the Ascend weight from 0% to 5%" in message


@pytest.mark.parametrize(
    ("config", "start"),
    [
        (
            {"envelopeChanges": "capacity"},
            "policy config envelopeChanges = 'capacity' is not a list",
        ),
        ({"envelopeChanges": [{"fact": "x"}]}, "policy config envelopeChanges entry"),
        ({"envelopeChanges": [CHANGE], "ownerApproved": "yes"}, "policy config ownerApproved"),
    ],
)
def test_a_malformed_config_fails_closed(good_stack, config, start):
    [message] = envelope(good_stack(20), previousWeight=20, **config)
    assert message.startswith(start)


def test_a_stack_without_routes_is_no_rollback(good_stack):
    """Deleting the route object sends nothing anywhere that can be measured: it is no weight
    below previousWeight, so an unapproved envelope change still fails."""
    stack = [obj for obj in good_stack(20) if obj["kind"] not in ("VirtualService", "HTTPRoute")]
    [message] = envelope(stack, envelopeChanges=[CHANGE], previousWeight=20)
    assert message.startswith(
        "capacity.totalReplicas: 4 -> 1: a change of the safety envelope (beyond ascendWeight "
        "and the image pair) needs an owner's approval"
    )


def test_an_approved_change_without_routes_is_no_rollback_either(good_stack, router):
    """Approved, a stack whose route object is gone lowers no weight: the served images are
    still judged against the base's (under Istio the DestinationRule still names the backends;
    an HTTPRoute was the only thing naming them)."""
    stack = [obj for obj in good_stack(20) if obj["kind"] not in ("VirtualService", "HTTPRoute")]
    before = {"nvidia": "registry/old:v1-cuda", "ascend": "registry/old:v1-npu"}
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": before}
    [message] = envelope(stack, previousWeight=20, **config)
    served = IMAGES if router == "istio" else {"nvidia": None, "ascend": None}
    assert message == (
        "the owners approved envelope changes (capacity.totalReplicas: 4 -> 1), but the same "
        f"pull request changes the nvidia image registry/old:v1-cuda -> {served['nvidia']} and "
        f"changes the ascend image registry/old:v1-npu -> {served['ascend']}: land the envelope "
        "change first, then the step in its own pull request"
    )


def test_an_approved_change_that_drops_a_backend_names_the_missing_image(good_stack):
    """No Ascend Deployment left: the served Ascend image is none, which is not the base's."""
    stack = good_stack(20)
    stack.remove(find(stack, "Deployment", "ascend"))
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": IMAGES}
    [message] = envelope(stack, previousWeight=20, **config)
    assert message == (
        "the owners approved envelope changes (capacity.totalReplicas: 4 -> 1), but the same "
        f"pull request changes the ascend image {ASCEND_IMAGE} -> None: land the envelope "
        "change first, then the step in its own pull request"
    )


@pytest.mark.parametrize(("previous", "ok"), [(100, True), (101, False), (-1, False)])
def test_previous_weight_is_a_percentage(good_stack, previous, ok):
    """previousWeight 0..100 is read; anything else is a malformed config (fail closed)."""
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True}
    found = envelope(good_stack(100), previousWeight=previous, **config)
    if ok:
        assert found == []
    else:
        [message] = found
        assert message.startswith(f"policy config previousWeight = {previous}")


def test_an_approved_first_deploy_at_1_percent_is_a_raise(good_stack):
    new_stack = [{**CHANGE, "fact": "Pulumi.canary.yaml", "kind": "stack"}]
    [message] = envelope(good_stack(1), envelopeChanges=new_stack, ownerApproved=True)
    assert "raises the Ascend weight from 0% to 1%" in message


def test_an_approved_raise_names_every_approved_change(good_stack):
    config = {"envelopeChanges": [CHANGE, FILE], "ownerApproved": True, "previousImages": IMAGES}
    assert envelope(good_stack(50), previousWeight=20, **config) == [
        "the owners approved envelope changes (capacity.totalReplicas: 4 -> 1; "
        "file policies/traffic.py: at base -> modified), but the same pull request raises the "
        "Ascend weight from 20% to 50%: land the envelope change first, then the step in its own "
        "pull request"
    ]
