"""safety-envelope-unchanged over hand-built stacks: the owners' approval, decreases, raises."""

from __future__ import annotations

import pytest

from tests.support.policy_objects import (
    ASCEND_IMAGE,
    NVIDIA_IMAGE,
    find,
    good_stack,
    stack_violations,
)

CHANGE = {"fact": "capacity.totalReplicas", "before": "4", "after": "1", "kind": "config"}
FILE = {"fact": "policies/traffic.py", "before": "at base", "after": "modified", "kind": "file"}
IMAGES = {"nvidia": NVIDIA_IMAGE, "ascend": ASCEND_IMAGE}


def envelope(objects, **config):
    return stack_violations("safety-envelope-unchanged", objects, config)


def test_no_change_passes():
    assert envelope(good_stack(20), envelopeChanges=[], previousWeight=5) == []


def test_without_the_judge_s_facts_it_fails_closed():
    [message] = envelope(good_stack(20), previousWeight=20)
    assert message.startswith("policy config envelopeChanges is absent: the base's judge")


def test_each_unapproved_change_is_one_violation_naming_the_fact():
    found = envelope(good_stack(20), envelopeChanges=[CHANGE, FILE], previousWeight=20)
    assert [message.split(": a change")[0] for message in found] == [
        "capacity.totalReplicas: 4 -> 1",
        "file policies/traffic.py: at base -> modified",
    ]
    assert "needs an owner's approval (a CODEOWNERS review on GitHub" in found[0]


@pytest.mark.parametrize(("previous", "weight"), [(50, 20), (100, 0), (20, 5)])
def test_a_decrease_alone_is_never_blocked(previous, weight):
    assert envelope(good_stack(weight), envelopeChanges=[], previousWeight=previous) == []


@pytest.mark.parametrize(("previous", "weight"), [(50, 20), (100, 0), (20, 5)])
def test_an_approved_change_with_a_decrease_passes(previous, weight):
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": IMAGES}
    assert envelope(good_stack(weight), previousWeight=previous, **config) == []


def test_a_decrease_does_not_carry_an_unapproved_change():
    """20 -> 5 with the ladder widened would land unapproved and judge 5 -> 100 next."""
    ladder = {"fact": "ladder", "before": "[0, 5, 20, 50, 80, 100]", "after": "[0, 5, 100]"}
    [message] = envelope(good_stack(5), envelopeChanges=[ladder], previousWeight=20)
    assert message.startswith(
        "ladder: [0, 5, 20, 50, 80, 100] -> [0, 5, 100]: a change of the safety envelope"
    )
    assert message.endswith(
        "or split it from the migration step (a weight decrease alone always passes)"
    )


def test_an_approved_change_without_a_move_passes():
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": IMAGES}
    assert envelope(good_stack(20), previousWeight=20, **config) == []


def test_an_approved_change_with_a_raise_fails():
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": IMAGES}
    [message] = envelope(good_stack(50), previousWeight=20, **config)
    assert message.startswith(
        "the owners approved envelope changes (capacity.totalReplicas: 4 -> 1), but the same "
        "pull request raises the Ascend weight from 20% to 50%: land the envelope change first"
    )


def test_an_approved_change_with_a_new_image_fails():
    stack = good_stack(20)
    container = find(stack, "Deployment", "nvidia")["spec"]["template"]["spec"]["containers"][0]
    container["image"] = "registry/inference-service:v1.2.4-cuda"
    config = {"envelopeChanges": [CHANGE], "ownerApproved": True, "previousImages": IMAGES}
    [message] = envelope(stack, previousWeight=20, **config)
    assert f"changes the nvidia image {NVIDIA_IMAGE} -> registry/inference-service:v1.2.4-cuda" in (
        message
    )


def test_an_approved_first_deploy_may_start_at_zero_only():
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
def test_a_malformed_config_fails_closed(config, start):
    [message] = envelope(good_stack(20), previousWeight=20, **config)
    assert message.startswith(start)
