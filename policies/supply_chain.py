"""Supply-chain policies: pinned images from one release, images pinned by digest, and no
Ascend image serving traffic before its precision check has passed (the base's record).

`images-pinned-by-digest` is advisory by default: a release tag is a pin the pack already
checks, but a tag can be pushed again, a digest cannot. A stack makes it mandatory with stack
config `security.requireImageDigests: true` (`dualstack policy-config` then writes
`enforcementLevel: mandatory` for it, taken from the base stack config). A digest may follow
the tag (`repo:v1.2.3-npu@sha256:...`), which keeps the release check of `image-pair-consistent`.

Where the verified images come from: the verification job (`dualstack verify-precision`, after
the precision check passed) records each verified {nvidia, ascend} pair in stack config
`verifiedImages` (the older form, `verifiedAscendImage`, names one Ascend image). The judge
reads that record from the BASE, never from the change under review, and passes it as policy
config `verifiedImages` (`dualstack policy-config`, `dualstack preview`); the
`dualstack.io/verified-ascend-image` annotation the program writes is the head's own claim and
is not trusted. While Ascend serves traffic, the served pair must be one of those pairs after a
raise AND after every image change, so rolling back to an earlier verified pair passes; only
weight 0 and a rollback (a decrease that keeps the deployed images, policy config
`previousAscendImage` and `previousImages`) pass without it. A decrease that also changes an
image is an upgrade like any other: the new image would serve live traffic unchecked. The
NVIDIA image serves the rest of the traffic (all of it at weight 0), so a change of it needs a
recorded pair naming it at every weight; the older single-image record names no NVIDIA image
and accepts only the deployed one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.common import (
    PREVIOUS_WEIGHT_SCHEMA,
    SHARE_SCHEMAS,
    SUBSET_SCHEMAS,
    ConfigError,
    config_errors_are_violations,
    config_int,
    config_str,
    containers,
    describe,
    kind_of,
    mapping,
    pod_template_spec,
)
from policies.members import SERVICES_SCHEMA, per_service
from policies.stack_view import Item, StackView, container_images
from policies.traffic_share import ascend_shares, backend_workload, percent

VERIFIED_IMAGE_ANNOTATION = "dualstack.io/verified-ascend-image"
"""Annotation the program puts on the Ascend Deployment (the head's own record, informative
only: the pack judges by the base's `verifiedImages`)."""

DEFAULT_TAG_PATTERN = r"^(?P<release>v?\d+\.\d+\.\d+)-(?P<flavor>[a-z0-9]+)$"
"""Release tags: `v1.2.3-cuda` and `v1.2.3-npu` share the release `v1.2.3`."""


def parse_image(image: str) -> tuple[str, str | None, str | None]:
    """(repository, tag, digest) of `registry:5000/team/app:v1.2.3-npu@sha256:...`."""
    name, _, digest = image.partition("@")
    _path, _, last = name.rpartition("/")  # only the last segment can carry a tag
    _image, _, tag = last.partition(":")  # (a colon before it is the registry's port)
    repository = name[: -len(tag) - 1] if tag else name
    return repository, tag or None, digest or None


def pin_problem(image: Any) -> str | None:
    """Why `image` is not pinned (no tag or digest, or the moving tag `latest`); None if it is."""
    if not isinstance(image, str) or not image:
        return f"has no image ({image!r})"
    _repository, tag, digest = parse_image(image)
    if digest:
        return None
    if tag is None:
        return f"uses {image} with no tag or digest; pin a release tag or a digest"
    if tag == "latest":
        return f"uses {image}: the moving tag `latest` is not a pin; use a release tag"
    return None


def digest_problem(image: Any) -> str | None:
    """Why `image` is not pinned by digest, with the fix; None when it carries `@sha256:...`."""
    if not isinstance(image, str) or not image:
        return f"has no image ({image!r})"
    _repository, tag, digest = parse_image(image)
    if digest:
        return None
    by = f"by the tag {tag} only" if tag else "with no tag or digest"
    return (
        f"uses {image}, pinned {by}; pin it by digest, e.g. "
        f"{image}@sha256:<digest> (the digest the registry reports for that tag)"
    )


def images_pinned_by_digest_validator(
    args: ResourceValidationArgs, report_violation: ReportViolation
) -> None:
    """Every container and init container of a workload names its image by digest
    (`@sha256:...`). Advisory unless the policy config sets `enforcementLevel: mandatory`."""
    props = mapping(args.props)
    spec = pod_template_spec(kind_of(args.resource_type), props)
    if spec is None:
        return
    where = describe(args.resource_type, props)
    for container in containers(spec):
        problem = digest_problem(container.get("image"))
        if problem:
            report_violation(f"{where} container {container.get('name') or '?'!r} {problem}", None)


def _tag_pattern(args: StackValidationArgs) -> re.Pattern[str]:
    raw = config_str(args.get_config(), "tagPattern", DEFAULT_TAG_PATTERN)
    try:
        pattern = re.compile(raw)
    except re.error as exc:
        raise ConfigError(f"tagPattern = {raw!r} is not a regular expression ({exc})") from None
    if "release" not in pattern.groupindex:
        raise ConfigError(f"tagPattern = {raw!r} has no named group (?P<release>...)")
    return pattern


def backend_image(view: StackView, config: Any, hardware: str) -> tuple[Item | None, Any, str]:
    """(workload, image of its first app container, problem) of one backend
    (`traffic_share.backend_workload`: behind its subset, or the one the routes reach).

    The image is None, and the problem says why, when there is no such workload, it has no
    containers, or its first container has no image; the problem is "" otherwise."""
    workload, why = backend_workload(view, config, hardware)
    if workload is None:
        return None, None, why
    images = container_images(workload)
    if not images:
        return workload, None, f"{workload.label} has no containers"
    name, image = images[0]
    if image is None:
        return workload, None, f"{workload.label} container {name!r} has no image"
    return workload, image, ""


def _image_pair_consistent(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Every container image of both backends is pinned (tag or digest, never `latest`), and the
    two model-server images (first container) carry tags of the same release (`tagPattern`)."""
    pattern = _tag_pattern(args)
    config = args.get_config()
    view = StackView.of(args.resources)
    if not view.route_objects:
        args.not_applicable("no VirtualService or HTTPRoute: no backend pair in this stack")
    releases: dict[str, tuple[str, str]] = {}
    for hardware in ("nvidia", "ascend"):
        workload, image, why = backend_image(view, config, hardware)
        if workload is None or image is None:
            report_violation(f"cannot check the {hardware} image: {why}", None)
            continue
        for name, each in container_images(workload):
            problem = pin_problem(each)
            if problem:
                report_violation(f"{workload.label} container {name!r} {problem}", workload.urn)
        if pin_problem(image):
            continue
        _repository, tag, _digest = parse_image(image)
        match = pattern.match(tag or "")
        if not match:
            report_violation(
                f"{workload.label} image {image} has tag {tag!r}, which does not match the "
                f"release pattern {pattern.pattern}; tag it like v1.2.3-{hardware}",
                workload.urn,
            )
            continue
        releases[hardware] = (match["release"], image)
    if len(releases) == 2 and releases["nvidia"][0] != releases["ascend"][0]:
        (nv_release, nv_image), (as_release, as_image) = releases["nvidia"], releases["ascend"]
        report_violation(
            f"the backends serve different releases: nvidia {nv_image} ({nv_release}) and "
            f"ascend {as_image} ({as_release}); move both images to the same release",
            None,
        )


image_pair_consistent_validator = per_service(config_errors_are_violations(_image_pair_consistent))
"""`_image_pair_consistent` wrapped by `per_service` and `config_errors_are_violations`
(applied by call, not with `@`: mutmut mutates no decorated function)."""


def _optional_image(config: Any, key: str) -> str | None:
    """The image reference at `key`; None when absent or empty.

    Raises ConfigError naming the key when the value is not a string.
    """
    value = config.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{key} = {value!r} is not an image reference")
    return value or None


VERIFY_COMMAND = "dualstack verify-precision --stack <stack> --nvidia URL --ascend URL"
"""How the verification job records a passing pair (`dualstack/commands/verify_precision.py`)."""


def verified_pairs(config: Any) -> list[tuple[str | None, str]]:
    """(nvidia image or None for the deployed one, ascend image) of config `verifiedImages` (a
    list of {nvidia, ascend}) plus `verifiedAscendImage` (the deployed NVIDIA image).

    Raises ConfigError naming the key when an entry is not such a mapping of image strings.
    """
    raw = config.get("verifiedImages")
    pairs: list[tuple[str | None, str]] = []
    if raw is not None:
        if isinstance(raw, str) or not isinstance(raw, Sequence):
            raise ConfigError(f"verifiedImages = {raw!r} is not a list of {{nvidia, ascend}}")
        for entry in raw:
            entry = mapping(entry)
            nvidia, ascend = entry.get("nvidia"), entry.get("ascend")
            if not isinstance(ascend, str) or not (nvidia is None or isinstance(nvidia, str)):
                raise ConfigError(f"verifiedImages entry {dict(entry)!r} is not {{nvidia, ascend}}")
            pairs.append((nvidia, ascend))
    legacy = _optional_image(config, "verifiedAscendImage")
    if legacy:
        pairs.append((None, legacy))
    return pairs


def _pairs_text(pairs: list[tuple[str | None, str]]) -> str:
    return "; ".join(
        f"{nvidia or 'the deployed nvidia image'} + {ascend}" for nvidia, ascend in pairs
    )


def _deployed_nvidia(config: Any) -> str | None:
    """The NVIDIA image the BASE (deployed) config serves, policy config `previousImages.nvidia`;
    None when not given. Raises ConfigError naming the key when it is not a string."""
    image = mapping(config.get("previousImages")).get("nvidia")
    if image is not None and not isinstance(image, str):
        raise ConfigError(f"previousImages.nvidia = {image!r} is not an image reference")
    return image or None


def _known(pairs: list[tuple[str | None, str]]) -> str:
    if pairs:
        return f"the base's precision-verified pairs are {_pairs_text(pairs)}"
    return "the base records no precision-verified image pair (verifiedImages)"


def _nvidia_at_weight_zero(
    view: StackView, config: Any, pairs: list[tuple[str | None, str]], report: ReportViolation
) -> None:
    """At weight 0 NVIDIA serves all live traffic: an image other than the deployed one
    (`previousImages.nvidia`; unknown counts as other) must be named by a recorded pair."""
    workload, image, why = backend_image(view, config, "nvidia")
    if workload is None or image is None:
        report(f"cannot check the NVIDIA image with the Ascend weight at 0%: {why}", None)
        return
    deployed = _deployed_nvidia(config)
    if image == deployed or any(nvidia == image for nvidia, _ascend in pairs):
        return
    report(
        f"with the Ascend weight at 0%: {workload.label} serves {image} to all live traffic in "
        f"place of the deployed {deployed or '(unknown: no previousImages)'}, but no pair the "
        f"base verified names it ({_known(pairs)}); let the verification job record a pair "
        f"with it first (`{VERIFY_COMMAND}`) or keep the deployed NVIDIA image",
        workload.urn,
    )


def _precision_verified_before_promotion(
    args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    """While Ascend serves traffic (weight > 0), the served image pair is a precision-verified
    one of config `verifiedImages` (the BASE's record): after a raise AND after every image
    change. An entry without `nvidia` (the older `verifiedAscendImage`) accepts only the
    deployed NVIDIA image (`previousImages.nvidia`). Exceptions: weight 0 (no Ascend traffic;
    the NVIDIA image, which then serves everything, must still be the deployed one or named by
    a recorded pair, unless there is no base: `previousWeight` absent) and a rollback, i.e. a
    weight below `previousWeight` serving the same Ascend image as `previousAscendImage` and
    the same NVIDIA image as `previousImages.nvidia` (the deployed ones): a rollback is never
    blocked. A decrease that changes an image, or with no deployed image to compare (fail
    closed), needs the check like a raise. With no `previousWeight` (first deploy) any weight
    > 0 needs it."""
    config = args.get_config()
    previous = config_int(config, "previousWeight", 0, 100)
    previous_image = _optional_image(config, "previousAscendImage")
    pairs = verified_pairs(config)
    view = StackView.of(args.resources)
    shares = ascend_shares(view, config)  # where traffic really goes, every route counted
    if not shares.routes:
        args.not_applicable("no VirtualService or HTTPRoute routes traffic")
    for message, urn in shares.problems:
        report_violation(f"cannot judge the Ascend share: {message}", urn)
    weight = shares.most
    if weight == 0:
        if previous is not None:
            _nvidia_at_weight_zero(view, config, pairs, report_violation)
        return  # no Ascend traffic: the Ascend image is never blocked
    workload, image, why = backend_image(view, config, "ascend")
    _nvidia_workload, nvidia_image, _why = backend_image(view, config, "nvidia")
    deployed_nvidia = _deployed_nvidia(config)
    nvidia_kept = deployed_nvidia is not None and nvidia_image == deployed_nvidia
    decrease = previous is not None and weight < previous
    if decrease and nvidia_kept and image is not None and image == previous_image:
        return  # a rollback to less traffic on the deployed images: never blocked
    replaced = []  # the deployed images this change replaces, named in one clause
    if previous is None or weight > previous:
        move = f"raising the Ascend weight from {previous or 0}% to {percent(weight)}"
    elif decrease:
        move = f"lowering the Ascend weight from {previous}% to {percent(weight)}"
        if not previous_image:
            move = f"{move} with no previousAscendImage to show the image is the deployed one"
        elif image != previous_image:
            replaced.append(f"the deployed Ascend image {previous_image}")
    else:
        move = f"with the Ascend weight at {percent(weight)}"
    if deployed_nvidia is not None and not nvidia_kept:
        replaced.append(f"the deployed NVIDIA image {deployed_nvidia}")
    if replaced:
        move = f"{move} while replacing {' and '.join(replaced)}"
    if workload is None or image is None:
        report_violation(f"cannot check the Ascend image {move}: {why}", None)
        return
    accepted = (None, nvidia_image) if nvidia_kept else (nvidia_image,)
    if any(ascend == image and nvidia in accepted for nvidia, ascend in pairs):
        return
    fix = (
        f"run the precision check for {image}"
        + ("" if nvidia_kept or deployed_nvidia is None else f" with {nvidia_image}")
        + " and let the verification job record the pair "
        f"(`{VERIFY_COMMAND}`, merged before this change), or set the weight to 0 while the "
        "new image is checked (weight 0, and a decrease that keeps the deployed images, are "
        "never blocked)"
    )
    served = f"serves {nvidia_image} + {image} to live traffic"
    report_violation(f"{move}: {workload.label} {served}, but {_known(pairs)}; {fix}", workload.urn)


precision_verified_before_promotion_validator = per_service(
    config_errors_are_violations(_precision_verified_before_promotion)
)
"""`_precision_verified_before_promotion` wrapped by `per_service` and
`config_errors_are_violations` (applied by call, not with `@`: mutmut mutates no
decorated function)."""


POLICIES = [
    StackValidationPolicy(
        name="image-pair-consistent",
        description="Both backends' images are pinned (tag or digest, never latest) and come "
        "from the same release (tagPattern, e.g. v1.2.3-cuda / v1.2.3-npu).",
        validate=image_pair_consistent_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "services": SERVICES_SCHEMA,
                "tagPattern": {
                    "type": "string",
                    "default": DEFAULT_TAG_PATTERN,
                    "description": "Regular expression an image tag must match; its named "
                    "group `release` must be equal for both backends.",
                },
                **SUBSET_SCHEMAS,
                **SHARE_SCHEMAS,  # the backends the routes reach (an HTTPRoute)
            }
        ),
    ),
    ResourceValidationPolicy(
        name="images-pinned-by-digest",
        description="Every workload container names its image by digest (@sha256:...); "
        "advisory unless security.requireImageDigests makes it mandatory.",
        validate=images_pinned_by_digest_validator,
        enforcement_level=EnforcementLevel.ADVISORY,
    ),
    StackValidationPolicy(
        name="precision-verified-before-promotion",
        description="While Ascend serves traffic (weight > 0), the served image pair is one "
        "the base records as precision-verified, after a raise and after every image change "
        "(a decrease included); a new NVIDIA image needs a recorded pair naming it at every "
        "weight; a rollback (a decrease keeping the deployed images) is never blocked.",
        validate=precision_verified_before_promotion_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "services": SERVICES_SCHEMA,
                "previousWeight": PREVIOUS_WEIGHT_SCHEMA,
                "previousAscendImage": {
                    "type": "string",
                    "description": "Ascend image of the BASE (deployed) stack config. A "
                    "decrease keeping this image is a rollback and needs no precision check; "
                    "absent, every weight > 0 needs it. Written by `dualstack policy-config "
                    "--base` and `dualstack preview --base`.",
                },
                "previousImages": {
                    "type": "object",
                    "properties": {"nvidia": {"type": "string"}, "ascend": {"type": "string"}},
                    "description": "The images the BASE (deployed) config serves, by hardware. "
                    "An NVIDIA image other than `nvidia` needs a recorded pair naming it, at "
                    "every weight; absent with a previousWeight, every NVIDIA image does.",
                },
                "verifiedImages": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "nvidia": {"type": "string"},
                            "ascend": {"type": "string"},
                        },
                        "required": ["ascend"],
                    },
                    "description": "The BASE's verification history: {nvidia, ascend} image "
                    "pairs whose precision check passed (no nvidia: the deployed NVIDIA image). "
                    "Written "
                    "by `dualstack policy-config` from the base, never from the change.",
                },
                "verifiedAscendImage": {
                    "type": "string",
                    "description": "One more verified Ascend image (with the deployed NVIDIA "
                    "image only), the older single-image record; set by hand only.",
                },
                **SHARE_SCHEMAS,
            }
        ),
    ),
]
"""The supply-chain policies, in report order."""
