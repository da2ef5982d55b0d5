"""image-pair-consistent, images-pinned-by-digest and precision-verified-before-promotion over
hand-built stacks."""

from __future__ import annotations

import pytest

from dualstack.offline.policy_run import run_policies
from policies.supply_chain import digest_problem, parse_image, pin_problem
from tests.support.policy_objects import (
    ASCEND_IMAGE,
    NOT_APPLICABLE,
    NVIDIA_IMAGE,
    VERIFIED,
    deployment,
    find,
    good_stack,
    resource_violations,
    stack_reports,
    stack_violations,
    urn,
    virtual_service,
)

NEW_ASCEND = "registry/inference-service:v1.2.4-npu"
NEW_NVIDIA = "registry/inference-service:v1.2.4-cuda"
VERIFY = "`dualstack verify-precision --stack <stack> --nvidia URL --ascend URL`"


def images(objects, config=None):
    return stack_violations("image-pair-consistent", objects, config)


BASE_VERIFIED = [{"nvidia": NVIDIA_IMAGE, "ascend": ASCEND_IMAGE}]
"""The base's verification history in these tests (the judge writes it from the base)."""


def precision(objects, config=None):
    """The policy's messages, the base having verified the v1.2.3 pair unless `config` says."""
    config = {"verifiedImages": BASE_VERIFIED, **(config or {})}
    return stack_violations("precision-verified-before-promotion", objects, config)


def set_image(stack, hardware, image):
    find(stack, "Deployment", hardware)["spec"]["template"]["spec"]["containers"][0]["image"] = (
        image
    )


class TestImagePairConsistent:
    def test_clean_stack_passes(self):
        assert images(good_stack(20)) == []

    def test_an_unpinned_image_is_reported_on_its_deployment(self):
        stack = good_stack(20)
        set_image(stack, "ascend", "registry/inference-service:latest")
        [(message, where)] = stack_reports("image-pair-consistent", stack)
        assert message.startswith("Deployment inference/inference-green container 'inference' ")
        assert where == urn(find(stack, "Deployment", "ascend"))

    def test_an_unreadable_nvidia_backend_still_checks_the_ascend_image(self):
        stack = [
            o
            for o in good_stack(20)
            if not (o["kind"] == "Deployment" and o["metadata"]["name"] == "inference-blue")
        ]
        set_image(stack, "ascend", "registry/inference-service:latest")
        assert stack_reports("image-pair-consistent", stack) == [
            (
                "cannot check the nvidia image: no workload in the stack runs the pods of "
                "subset 'nvidia'",
                None,
            ),
            (
                "Deployment inference/inference-green container 'inference' uses "
                "registry/inference-service:latest: the moving tag `latest` is not a pin; use a "
                "release tag",
                urn(find(stack, "Deployment", "ascend")),
            ),
        ]

    def test_an_unpinned_nvidia_image_still_checks_the_ascend_tag(self):
        stack = good_stack(20)
        set_image(stack, "nvidia", "registry/inference-service:latest")
        set_image(stack, "ascend", "registry/inference-service:nightly")
        reports = stack_reports("image-pair-consistent", stack)
        assert [where for _message, where in reports] == [
            urn(find(stack, "Deployment", "nvidia")),
            urn(find(stack, "Deployment", "ascend")),
        ]
        assert reports[1][0] == (
            "Deployment inference/inference-green image registry/inference-service:nightly has "
            "tag 'nightly', which does not match the release pattern "
            r"^(?P<release>v?\d+\.\d+\.\d+)-(?P<flavor>[a-z0-9]+)$; tag it like v1.2.3-ascend"
        )

    def test_a_digest_only_image_is_judged_as_an_empty_tag(self):
        """With a tagPattern that accepts an empty tag, two digest-only images are one release."""
        stack = good_stack(20)
        digest = "sha256:" + "ab" * 32
        set_image(stack, "nvidia", f"registry/inference-service@{digest}")
        set_image(stack, "ascend", f"registry/inference-service-npu@{digest}")
        assert images(stack, {"tagPattern": r"^(?P<release>[a-z0-9.]*)$"}) == []
        found = images(stack)  # the default pattern wants a release tag on each
        assert len(found) == 2
        assert all(" has tag None, which does not match the release pattern " in m for m in found)

    def test_a_stack_without_a_route_object_is_not_applicable(self):
        routeless = [o for o in good_stack(20) if o["kind"] != "VirtualService"]
        assert stack_reports("image-pair-consistent", routeless) == (
            "not applicable: no VirtualService or HTTPRoute: no backend pair in this stack"
        )

    @pytest.mark.parametrize(
        ("image", "expected"),
        [
            ("registry/inference-service", "no tag or digest"),
            ("registry/inference-service:latest", "moving tag `latest`"),
        ],
    )
    def test_unpinned_images_fail(self, image, expected):
        stack = good_stack(20)
        set_image(stack, "ascend", image)
        [message] = images(stack)
        assert "Deployment inference/inference-green container 'inference'" in message
        assert expected in message

    def test_digest_with_release_tag_passes(self):
        stack = good_stack(20)
        set_image(stack, "ascend", ASCEND_IMAGE + "@sha256:" + "a" * 64)
        assert images(stack) == []

    def test_different_releases_fail(self):
        stack = good_stack(20)
        set_image(stack, "ascend", NEW_ASCEND)
        [message] = images(stack)
        assert "nvidia registry/inference-service:v1.2.3-cuda (v1.2.3)" in message
        assert "ascend registry/inference-service:v1.2.4-npu (v1.2.4)" in message

    def test_tag_outside_the_pattern_fails(self):
        stack = good_stack(20)
        set_image(stack, "nvidia", "registry/inference-service:nightly")
        [message] = images(stack)
        assert "tag 'nightly', which does not match the release pattern" in message

    def test_tag_pattern_config_overrides_default(self):
        stack = good_stack(20)
        set_image(stack, "nvidia", "registry/inference-service:2024.06-gpu")
        set_image(stack, "ascend", "registry/inference-service:2024.06-ascend")
        assert len(images(stack)) == 2
        assert images(stack, {"tagPattern": r"^(?P<release>\d{4}\.\d{2})-\w+$"}) == []

    @pytest.mark.parametrize("pattern", ["(unclosed", r"^v\d+$"])
    def test_bad_tag_pattern_fails_closed(self, pattern):
        [message] = images(good_stack(20), {"tagPattern": pattern})
        assert message.startswith("policy config tagPattern = ")

    def test_missing_backend_or_image_fails_closed(self):
        stack = good_stack(20)
        del find(stack, "Deployment", "nvidia")["spec"]["template"]["spec"]["containers"]
        [message] = images(stack)
        assert (
            "cannot check the nvidia image: Deployment inference/inference-blue has no containers"
            in message
        )

    def test_a_first_container_without_an_image_is_named(self):
        stack = good_stack(20)
        del find(stack, "Deployment", "nvidia")["spec"]["template"]["spec"]["containers"][0][
            "image"
        ]
        assert images(stack) == [
            "cannot check the nvidia image: Deployment inference/inference-blue container "
            "'inference' has no image"
        ]
        assert precision(stack, {"previousWeight": 20}) == [
            "with the Ascend weight at 20%: Deployment inference/inference-green serves None + "
            f"{ASCEND_IMAGE} to live traffic, but the base's precision-verified pairs are "
            f"{NVIDIA_IMAGE} + {ASCEND_IMAGE}; run the precision check for {ASCEND_IMAGE} and let "
            "the verification job record the pair (`dualstack verify-precision --stack <stack> "
            "--nvidia URL --ascend URL`, merged before this change), or set the weight to 0 "
            "while the new image is checked (weight 0, and a decrease that keeps the deployed "
            "images, are never blocked)"
        ]

    def test_stack_without_split_is_not_applicable(self):
        assert images([find(good_stack(), "Service")]) == NOT_APPLICABLE


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("registry/app:v1", ("registry/app", "v1", None)),
        ("registry:5000/team/app", ("registry:5000/team/app", None, None)),
        ("registry:5000/app:v1@sha256:ab", ("registry:5000/app", "v1", "sha256:ab")),
        ("app@sha256:ab", ("app", None, "sha256:ab")),
    ],
)
def test_parse_image(image, parts):
    assert parse_image(image) == parts


@pytest.mark.parametrize("image", [None, "", 5, ["registry/app:v1"]])
def test_an_image_that_is_no_name_is_reported_as_missing(image):
    """An empty string or a non-string (a bad render) is no image, for both pin rules."""
    assert pin_problem(image) == f"has no image ({image!r})"
    assert digest_problem(image) == f"has no image ({image!r})"


class TestPrecisionVerifiedBeforePromotion:
    def test_raise_with_verified_image_passes(self):
        assert precision(good_stack(20), {"previousWeight": 5}) == []

    def test_raise_with_changed_image_fails(self):
        stack = good_stack(20)
        set_image(stack, "ascend", NEW_ASCEND)
        [message] = precision(stack, {"previousWeight": 5})
        assert "raising the Ascend weight from 5% to 20%" in message
        assert f"serves {NVIDIA_IMAGE} + {NEW_ASCEND} to live traffic" in message
        assert f"the base's precision-verified pairs are {NVIDIA_IMAGE} + {ASCEND_IMAGE}" in (
            message
        )
        assert f"run the precision check for {NEW_ASCEND}" in message
        assert VERIFY in message

    def test_raise_without_any_verified_pair_fails(self):
        [message] = precision(good_stack(20), {"previousWeight": 5, "verifiedImages": []})
        assert "the base records no precision-verified image pair (verifiedImages)" in message
        assert VERIFY in message

    def test_the_head_s_annotation_is_not_evidence(self):
        """The program's annotation is the head's own claim: without the base's record it
        verifies nothing."""
        stack = good_stack(20)
        set_image(stack, "ascend", NEW_ASCEND)
        find(stack, "Deployment", "ascend")["metadata"]["annotations"] = {VERIFIED: NEW_ASCEND}
        [message] = precision(stack, {"previousWeight": 5})
        assert f"serves {NVIDIA_IMAGE} + {NEW_ASCEND} to live traffic" in message

    @pytest.mark.parametrize("weight", [5, 20, 100])
    def test_image_change_at_the_same_weight_fails(self, weight):
        """The precision check is required after every image upgrade, not only on a raise."""
        stack = good_stack(weight)
        set_image(stack, "ascend", NEW_ASCEND)
        [message] = precision(stack, {"previousWeight": weight})
        assert message.startswith(
            f"with the Ascend weight at {weight}%: Deployment inference/inference-green serves "
            f"{NVIDIA_IMAGE} + {NEW_ASCEND} to live traffic, but the base's precision-verified "
            f"pairs are {NVIDIA_IMAGE} + {ASCEND_IMAGE}"
        )
        assert "or set the weight to 0 while the new image is checked" in message

    def test_the_message_lists_every_verified_pair_of_the_base(self):
        """An entry without `nvidia` accepts the deployed NVIDIA image, and the message says so."""
        stack = good_stack(20)
        set_image(stack, "ascend", NEW_ASCEND)
        older = "registry/inference-service:v1.1.0-npu"
        history = [*BASE_VERIFIED, {"ascend": older}]
        [message] = precision(stack, {"previousWeight": 20, "verifiedImages": history})
        assert message == (
            f"with the Ascend weight at 20%: Deployment inference/inference-green serves "
            f"{NVIDIA_IMAGE} + {NEW_ASCEND} to live traffic, but the base's precision-verified "
            f"pairs are {NVIDIA_IMAGE} + {ASCEND_IMAGE}; the deployed nvidia image + {older}; run "
            "the "
            f"precision check for {NEW_ASCEND} and let the verification job record the pair "
            f"({VERIFY}, merged before this change), or set the weight to 0 while the new image "
            "is checked (weight 0, and a decrease that keeps the deployed images, are never "
            "blocked)"
        )

    @pytest.mark.parametrize(("previous", "ok"), [(100, True), (101, False)])
    def test_previous_weight_is_a_percentage(self, previous, ok):
        found = precision(good_stack(100), {"previousWeight": previous})
        if ok:
            assert found == []
        else:
            [message] = found
            assert message.startswith(f"policy config previousWeight = {previous}")

    def test_without_a_route_object_it_does_not_apply(self):
        routeless = [o for o in good_stack(20) if o["kind"] != "VirtualService"]
        assert stack_reports("precision-verified-before-promotion", routeless) == (
            "not applicable: no VirtualService or HTTPRoute routes traffic"
        )

    def test_an_unjudgeable_share_is_reported_on_its_virtual_service(self):
        stack = good_stack(20)
        vs = find(stack, "VirtualService")
        del vs["spec"]["http"][0]["route"][1]["weight"]
        config = {"verifiedImages": BASE_VERIFIED, "previousWeight": 20}
        [(message, where)] = stack_reports("precision-verified-before-promotion", stack, config)
        assert message.startswith("cannot judge the Ascend share: VirtualService ")
        assert where == urn(vs)

    def test_with_no_verified_pair_the_message_says_so_on_the_ascend_deployment(self):
        stack = good_stack(20)
        [(message, where)] = stack_reports(
            "precision-verified-before-promotion", stack, {"previousWeight": 5}
        )
        assert message.startswith(
            "raising the Ascend weight from 5% to 20%: Deployment inference/inference-green "
            f"serves {NVIDIA_IMAGE} + {ASCEND_IMAGE} to live traffic, but the base records no "
            "precision-verified image pair (verifiedImages); run the precision check for "
        )
        assert where == urn(find(stack, "Deployment", "ascend"))

    def test_an_ascend_deployment_without_containers_fails_closed(self):
        stack = good_stack(20)
        find(stack, "Deployment", "ascend")["spec"]["template"]["spec"]["containers"] = []
        assert precision(stack, {"previousWeight": 5}) == [
            "cannot check the Ascend image raising the Ascend weight from 5% to 20%: "
            "Deployment inference/inference-green has no containers"
        ]

    @pytest.mark.parametrize(
        ("history", "expected"),
        [
            ("v1.2.3-npu", "verifiedImages = 'v1.2.3-npu' is not a list of {nvidia, ascend}"),
            (5, "verifiedImages = 5.0 is not a list of {nvidia, ascend}"),
            (
                [{"nvidia": NVIDIA_IMAGE}],
                f"verifiedImages entry {{'nvidia': '{NVIDIA_IMAGE}'}} is not {{nvidia, ascend}}",
            ),
        ],
    )
    def test_a_malformed_history_fails_closed(self, history, expected):
        assert precision(good_stack(20), {"previousWeight": 5, "verifiedImages": history}) == [
            f"policy config {expected}; regenerate it with `dualstack policy-config`"
        ]

    def test_holding_with_the_verified_image_passes(self):
        assert precision(good_stack(20), {"previousWeight": 20}) == []

    @pytest.mark.parametrize(("previous", "weight"), [(50, 20), (80, 0), (5, 0), (100, 80)])
    def test_rollback_never_needs_verification(self, previous, weight):
        """A decrease keeping the deployed image is never blocked, even with no verified pair."""
        stack = good_stack(weight)
        set_image(stack, "ascend", NEW_ASCEND)
        config = {
            "previousWeight": previous,
            "previousAscendImage": NEW_ASCEND,
            "previousImages": {"nvidia": NVIDIA_IMAGE},
        }
        assert precision(stack, config) == []
        assert precision(stack, {**config, "verifiedImages": []}) == []

    @pytest.mark.parametrize(("previous", "weight"), [(50, 20), (100, 80), (20, 5)])
    def test_decrease_with_a_new_image_needs_verification(self, previous, weight):
        """Lowering the weight while changing the image puts an unchecked image on traffic."""
        stack = good_stack(weight)
        set_image(stack, "ascend", NEW_ASCEND)
        [message] = precision(
            stack, {"previousWeight": previous, "previousAscendImage": ASCEND_IMAGE}
        )
        assert message.startswith(
            f"lowering the Ascend weight from {previous}% to {weight}% while replacing the "
            f"deployed Ascend image {ASCEND_IMAGE}: Deployment inference/inference-green serves "
            f"{NVIDIA_IMAGE} + {NEW_ASCEND} to live traffic"
        )
        assert VERIFY in message

    def test_a_rollback_to_an_earlier_verified_pair_passes(self):
        """The history keeps every verified pair: back from v1.2.4 to v1.2.3 at 20 %."""
        history = [*BASE_VERIFIED, {"nvidia": NEW_NVIDIA, "ascend": NEW_ASCEND}]
        config = {"previousWeight": 20, "previousAscendImage": NEW_ASCEND}
        assert precision(good_stack(20), {**config, "verifiedImages": history}) == []

    def test_a_verified_ascend_image_with_another_nvidia_image_is_not_a_verified_pair(self):
        stack = good_stack(20)
        set_image(stack, "nvidia", NEW_NVIDIA)
        [message] = precision(stack, {"previousWeight": 5})
        assert f"serves {NEW_NVIDIA} + {ASCEND_IMAGE} to live traffic" in message

    def test_decrease_to_a_new_verified_image_passes(self):
        stack = good_stack(20)
        set_image(stack, "ascend", NEW_ASCEND)
        set_image(stack, "nvidia", NEW_NVIDIA)
        history = [{"nvidia": NEW_NVIDIA, "ascend": NEW_ASCEND}]
        config = {"previousWeight": 50, "previousAscendImage": ASCEND_IMAGE}
        assert precision(stack, {**config, "verifiedImages": history}) == []

    def test_decrease_without_previous_image_fails_closed(self):
        """No previousAscendImage: the image may have changed, so it must be a verified one."""
        stack = good_stack(20)
        set_image(stack, "ascend", NEW_ASCEND)
        [message] = precision(stack, {"previousWeight": 50})
        assert message.startswith(
            "lowering the Ascend weight from 50% to 20% with no previousAscendImage to show the "
            "image is the deployed one: "
        )
        assert precision(good_stack(20), {"previousWeight": 50}) == []  # the verified pair

    def test_decrease_to_zero_with_a_new_image_passes(self):
        stack = good_stack(0)
        set_image(stack, "ascend", NEW_ASCEND)
        assert precision(stack, {"previousWeight": 50, "previousAscendImage": ASCEND_IMAGE}) == []

    def test_previous_image_does_not_exempt_a_raise_or_a_hold(self):
        stack = good_stack(20)
        set_image(stack, "ascend", NEW_ASCEND)
        for previous in (5, 20):
            [message] = precision(
                stack, {"previousWeight": previous, "previousAscendImage": NEW_ASCEND}
            )
            assert f"serves {NVIDIA_IMAGE} + {NEW_ASCEND} to live traffic" in message

    def test_bad_previous_image_fails_closed(self):
        [message] = precision(good_stack(20), {"previousWeight": 50, "previousAscendImage": 7})
        assert message.startswith("policy config previousAscendImage = 7.0 is not an image")

    @pytest.mark.parametrize("bad", ["v1.2.3", [{"nvidia": "x"}], [7]])
    def test_bad_verified_images_fail_closed(self, bad):
        [message] = precision(good_stack(20), {"previousWeight": 5, "verifiedImages": bad})
        assert message.startswith("policy config verifiedImages")

    @pytest.mark.parametrize("previous", [None, 0, 20])
    def test_weight_zero_never_needs_verification(self, previous):
        stack = good_stack(0)
        set_image(stack, "ascend", NEW_ASCEND)
        config = {"verifiedImages": []} if previous is None else {"previousWeight": previous}
        assert precision(stack, config) == []

    def test_first_deploy_counts_as_a_raise_from_zero(self):
        stack = good_stack(5)
        set_image(stack, "ascend", NEW_ASCEND)
        [message] = precision(stack)
        assert "from 0% to 5%" in message
        assert precision(good_stack(0)) == []

    def test_bad_previous_weight_fails_closed(self):
        [message] = precision(good_stack(20), {"previousWeight": "five"})
        assert message.startswith("policy config previousWeight = 'five'")

    def test_missing_ascend_backend_fails_closed(self):
        stack = good_stack(20)
        find(stack, "DestinationRule")["spec"]["subsets"][1]["labels"] = {"hardware": "npu"}
        share, image = precision(stack, {"previousWeight": 5})
        assert share.startswith("cannot judge the Ascend share: VirtualService")
        assert "subset 'ascend'" in share and "selects no pod" in share
        assert image.startswith("cannot check the Ascend image raising the Ascend weight")

    def test_no_split_is_not_applicable(self):
        stack = [o for o in good_stack(20) if o["kind"] != "VirtualService"]
        assert precision(stack, {"previousWeight": 5}) == NOT_APPLICABLE


class TestTheNvidiaImageIsJudgedAtEveryWeight:
    """Issue 28: the NVIDIA image serves the rest of the traffic (all of it at weight 0): a
    change of it needs a recorded pair naming it, on a decrease and at weight 0 too; the older
    single-image record (`verifiedAscendImage`, no `nvidia`) accepts only the deployed one."""

    EVIL = "evil.example/inference-service:v1.2.3-cuda"

    def config(self, previous, **more):
        deployed = {"nvidia": NVIDIA_IMAGE, "ascend": ASCEND_IMAGE}
        config = {"previousWeight": previous, "previousAscendImage": ASCEND_IMAGE}
        return {**config, "previousImages": deployed, **more}

    @pytest.mark.parametrize(("previous", "weight"), [(20, 5), (100, 80), (50, 20)])
    def test_a_decrease_swapping_the_nvidia_image_needs_a_verified_pair(self, previous, weight):
        stack = good_stack(weight)
        set_image(stack, "nvidia", self.EVIL)
        [message] = precision(stack, self.config(previous))
        assert message.startswith(
            f"lowering the Ascend weight from {previous}% to {weight}% while replacing the "
            f"deployed NVIDIA image {NVIDIA_IMAGE}: Deployment inference/inference-green "
            f"serves {self.EVIL} + {ASCEND_IMAGE} to live traffic, but the base's "
            f"precision-verified pairs are {NVIDIA_IMAGE} + {ASCEND_IMAGE}; run the precision "
            f"check for {ASCEND_IMAGE} with {self.EVIL}"
        )

    @pytest.mark.parametrize("previous", [0, 20])
    def test_at_weight_zero_an_nvidia_change_needs_a_recorded_pair(self, previous):
        stack = good_stack(0)
        set_image(stack, "nvidia", NEW_NVIDIA)
        [(message, where)] = stack_reports(
            "precision-verified-before-promotion",
            stack,
            {"verifiedImages": BASE_VERIFIED, **self.config(previous)},
        )
        assert message == (
            f"with the Ascend weight at 0%: Deployment inference/inference-blue serves "
            f"{NEW_NVIDIA} to all live traffic in place of the deployed {NVIDIA_IMAGE}, but no "
            f"pair the base verified names it (the base's precision-verified pairs are "
            f"{NVIDIA_IMAGE} + {ASCEND_IMAGE}); let the verification job record a pair with "
            f"it first ({VERIFY}) or keep the deployed NVIDIA image"
        )
        assert where == urn(find(stack, "Deployment", "nvidia"))
        history = [*BASE_VERIFIED, {"nvidia": NEW_NVIDIA, "ascend": NEW_ASCEND}]
        assert precision(stack, self.config(previous, verifiedImages=history)) == []

    def test_at_weight_zero_the_single_image_record_names_no_nvidia_image(self):
        stack = good_stack(0)
        set_image(stack, "nvidia", NEW_NVIDIA)
        legacy = self.config(20, verifiedImages=[{"ascend": ASCEND_IMAGE}])
        [message] = precision(stack, legacy)
        assert f"serves {NEW_NVIDIA} to all live traffic" in message
        assert f"the deployed nvidia image + {ASCEND_IMAGE}" in message

    def test_at_weight_zero_the_deployed_nvidia_image_needs_no_record(self):
        stack = good_stack(0)
        set_image(stack, "ascend", NEW_ASCEND)
        assert precision(stack, self.config(20, verifiedImages=[])) == []

    def test_at_weight_zero_without_the_deployed_images_the_change_is_judged(self):
        """A base but no previousImages: the NVIDIA image may have changed (fail closed)."""
        [message] = precision(good_stack(0), {"previousWeight": 20, "verifiedImages": []})
        assert message.startswith(
            "with the Ascend weight at 0%: Deployment inference/inference-blue serves "
            f"{NVIDIA_IMAGE} to all live traffic in place of the deployed (unknown: no "
            "previousImages), but no pair the base verified names it (the base records no "
            "precision-verified image pair (verifiedImages));"
        )
        assert precision(good_stack(0), {"previousWeight": 20}) == []  # a recorded pair

    def test_at_weight_zero_a_missing_nvidia_backend_fails_closed(self):
        stack = good_stack(0)
        find(stack, "Deployment", "nvidia")["spec"]["template"]["spec"]["containers"] = []
        config = {"verifiedImages": BASE_VERIFIED, **self.config(20)}
        assert stack_reports("precision-verified-before-promotion", stack, config) == [
            (
                "cannot check the NVIDIA image with the Ascend weight at 0%: Deployment "
                "inference/inference-blue has no containers",
                None,  # reported on the stack
            )
        ]

    def test_the_single_image_record_accepts_only_the_deployed_nvidia_image(self):
        legacy = self.config(5, verifiedImages=[], verifiedAscendImage=ASCEND_IMAGE)
        assert precision(good_stack(20), legacy) == []
        stack = good_stack(20)
        set_image(stack, "nvidia", NEW_NVIDIA)
        [message] = precision(stack, legacy)
        assert message.startswith(
            "raising the Ascend weight from 5% to 20% while replacing the deployed NVIDIA image "
            f"{NVIDIA_IMAGE}: Deployment inference/inference-green serves {NEW_NVIDIA} + "
            f"{ASCEND_IMAGE} to live traffic, but the base's precision-verified pairs are the "
            f"deployed nvidia image + {ASCEND_IMAGE}; "
        )

    @pytest.mark.parametrize(("previous", "weight"), [(20, 5), (50, 20)])
    def test_a_decrease_replacing_both_images_names_both_in_one_clause(self, previous, weight):
        stack = good_stack(weight)
        set_image(stack, "nvidia", self.EVIL)
        set_image(stack, "ascend", NEW_ASCEND)
        [message] = precision(stack, self.config(previous))
        assert message.startswith(
            f"lowering the Ascend weight from {previous}% to {weight}% while replacing the "
            f"deployed Ascend image {ASCEND_IMAGE} and the deployed NVIDIA image "
            f"{NVIDIA_IMAGE}: Deployment inference/inference-green serves {self.EVIL} + "
            f"{NEW_ASCEND} to live traffic"
        )
        assert message.count("while replacing") == 1

    def test_a_raise_replacing_both_images_names_the_nvidia_one(self):
        """A raise needs the check whatever the Ascend image is, so only the NVIDIA image, which
        keeps serving the rest of the traffic, is named as replaced."""
        stack = good_stack(20)
        set_image(stack, "nvidia", self.EVIL)
        set_image(stack, "ascend", NEW_ASCEND)
        [message] = precision(stack, self.config(5))
        assert message.startswith(
            "raising the Ascend weight from 5% to 20% while replacing the deployed NVIDIA image "
            f"{NVIDIA_IMAGE}: Deployment inference/inference-green serves {self.EVIL} + "
            f"{NEW_ASCEND} to live traffic"
        )

    def test_without_the_deployed_images_the_single_image_record_accepts_none(self):
        config = {"previousWeight": 5, "verifiedImages": [], "verifiedAscendImage": ASCEND_IMAGE}
        [message] = precision(good_stack(20), config)
        assert "while replacing the deployed NVIDIA image" not in message
        assert f"serves {NVIDIA_IMAGE} + {ASCEND_IMAGE} to live traffic" in message

    @pytest.mark.parametrize(("previous", "weight"), [(20, 5), (50, 0), (100, 20)])
    def test_a_plain_rollback_is_never_blocked(self, previous, weight):
        """Weight down, both images the deployed ones: passes with no record at all."""
        assert precision(good_stack(weight), self.config(previous, verifiedImages=[])) == []

    def test_a_decrease_to_a_recorded_pair_with_a_new_nvidia_image_passes(self):
        stack = good_stack(5)
        set_image(stack, "nvidia", NEW_NVIDIA)
        history = [{"nvidia": NEW_NVIDIA, "ascend": ASCEND_IMAGE}]
        assert precision(stack, self.config(20, verifiedImages=history)) == []

    @pytest.mark.parametrize("bad", [7, ["x"]])
    def test_bad_deployed_images_fail_closed(self, bad):
        config = {"previousWeight": 20, "previousImages": {"nvidia": bad}}
        [message] = precision(good_stack(0), config)
        assert message.startswith("policy config previousImages.nvidia = ")
        assert "is not an image reference" in message


# images-pinned-by-digest -------------------------------------------------------------------

DIGEST = "sha256:" + "ab" * 32


def digest_findings(obj, config=None):
    return resource_violations("images-pinned-by-digest", [obj], config)


def test_digest_pinned_images_pass():
    assert digest_findings(deployment("ascend", 1, f"{ASCEND_IMAGE}@{DIGEST}")) == []
    assert digest_findings(deployment("nvidia", 4, f"registry/inference-service@{DIGEST}")) == []


def test_a_tag_is_reported_with_the_digest_form_to_use():
    [message] = digest_findings(deployment("ascend", 1, ASCEND_IMAGE))
    assert message == (
        "Deployment inference/inference-green container 'inference' uses "
        "registry/inference-service:v1.2.3-npu, pinned by the tag v1.2.3-npu only; pin it by "
        "digest, e.g. registry/inference-service:v1.2.3-npu@sha256:<digest> (the digest the "
        "registry reports for that tag)"
    )


def test_init_containers_and_missing_images_are_reported():
    obj = deployment("nvidia", 4, f"{NVIDIA_IMAGE}@{DIGEST}")
    spec = obj["spec"]["template"]["spec"]
    spec["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    spec["containers"].append({"name": "sidecar"})
    found = digest_findings(obj)
    assert found == [
        "Deployment inference/inference-blue container 'fetch' uses busybox, pinned with no tag "
        "or digest; pin it by digest, e.g. busybox@sha256:<digest> (the digest the registry "
        "reports for that tag)",
        "Deployment inference/inference-blue container 'sidecar' has no image (None)",
    ]


def test_a_nameless_container_is_named_by_a_question_mark():
    obj = deployment("nvidia", 4, "busybox:1.36")
    del obj["spec"]["template"]["spec"]["containers"][0]["name"]
    assert digest_findings(obj) == [
        "Deployment inference/inference-blue container '?' uses busybox:1.36, pinned by the tag "
        "1.36 only; pin it by digest, e.g. busybox:1.36@sha256:<digest> (the digest the registry "
        "reports for that tag)"
    ]


def test_objects_without_pods_are_not_judged():
    assert digest_findings(virtual_service(20)) == []
    assert digest_findings({"kind": "Deployment", "metadata": {"name": "x"}}) == []


def test_digest_pinning_is_advisory_unless_configured_mandatory():
    """The pack's default level is advisory; `enforcementLevel: mandatory` in the policy
    config (written by `dualstack policy-config` for security.requireImageDigests) blocks."""
    stack = good_stack(20)
    [advisory_level] = {
        r.outcome for r in run_policies(stack, {}) if r.policy == "images-pinned-by-digest"
    }
    assert advisory_level == "advisory"
    mandatory = {"images-pinned-by-digest": {"enforcementLevel": "mandatory"}}
    results = [r for r in run_policies(stack, mandatory) if r.policy == "images-pinned-by-digest"]
    assert {r.outcome for r in results} == {"violation"}
    assert sorted(r.resource for r in results) == [
        "Deployment inference/inference-blue",
        "Deployment inference/inference-green",
    ]
