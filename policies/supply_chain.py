"""Supply-chain policies: pinned images from one release, images pinned by digest, and no
Ascend image serving traffic before its precision check has passed.

`images-pinned-by-digest` is advisory by default: a release tag is a pin the pack already
checks, but a tag can be pushed again, a digest cannot. A stack makes it mandatory with stack
config `security.requireImageDigests: true` (`dualstack policy-config` then writes
`enforcementLevel: mandatory` for it, taken from the base stack config). A digest may follow
the tag (`repo:v1.2.3-npu@sha256:...`), which keeps the release check of `image-pair-consistent`.

Where the verified image comes from: the precision-check workflow records the Ascend image
whose check passed in stack config `verifiedAscendImage`; the program copies it onto the Ascend
Deployment as the annotation `dualstack.io/verified-ascend-image` (so the pack sees it in the
props, online and offline). Policy config `verifiedAscendImage`, when set, takes precedence.
Changing the Ascend image resets the verification: the served image no longer equals it, so
the precision check is required before a raise AND after every image upgrade while Ascend serves
traffic; only weight 0 and a rollback (a decrease that keeps the deployed Ascend image, policy
config `previousAscendImage`) pass without it. A decrease that also changes the image is an
upgrade like any other: the new image would serve live traffic unchecked.
"""

from __future__ import annotations

import re
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
    path,
    pod_template_spec,
    subset_name,
)
from policies.stack_view import Item, StackView, container_images
from policies.traffic_share import ascend_shares, nvidia_backend, percent

VERIFIED_IMAGE_ANNOTATION = "dualstack.io/verified-ascend-image"
"""Annotation of the Ascend Deployment naming the image whose precision check passed."""

DEFAULT_TAG_PATTERN = r"^(?P<release>v?\d+\.\d+\.\d+)-(?P<flavor>[a-z0-9]+)$"
"""Release tags: `v1.2.3-cuda` and `v1.2.3-npu` share the release `v1.2.3`."""


def parse_image(image: str) -> tuple[str, str | None, str | None]:
    """(repository, tag, digest) of `registry:5000/team/app:v1.2.3-npu@sha256:...`."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else None
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


def _routed_backend(view: StackView, config: Any, hardware: str) -> tuple[Item | None, str]:
    """The one workload of `hardware` the routes reach, for a split without subsets (an
    HTTPRoute to per-backend Services): Ascend's by the Ascend pods it reaches, NVIDIA's as
    the one other workload (`traffic_share.nvidia_backend`)."""
    shares = ascend_shares(view, config)
    if hardware == "nvidia":
        return nvidia_backend(shares, config)
    found = [workload for workload, _share in shares.ascend_workloads()]
    if len(found) == 1:
        return found[0], ""
    if not found:
        return None, "no route reaches the pods of an Ascend workload"
    return None, f"the routes reach several Ascend workloads: {', '.join(w.label for w in found)}"


def _backend_image(view: StackView, config: Any, hardware: str) -> tuple[Item | None, Any, str]:
    """(workload, image of its first app container, problem) of one backend: the workload
    behind its subset, else (no DestinationRule defines it) the one the routes reach."""
    workload, why = view.backend(subset_name(config, hardware))
    if workload is None and not view.destination_rules:
        workload, why = _routed_backend(view, config, hardware)
    if workload is None:
        return None, None, why
    images = container_images(workload)
    if not images:
        return workload, None, f"{workload.label} has no containers"
    return workload, images[0][1], ""


@config_errors_are_violations
def image_pair_consistent_validator(
    args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    """Every container image of both backends is pinned (tag or digest, never `latest`), and the
    two model-server images (first container) carry tags of the same release (`tagPattern`)."""
    pattern = _tag_pattern(args)
    config = args.get_config()
    view = StackView.of(args.resources)
    if not view.route_objects:
        args.not_applicable("no VirtualService or HTTPRoute: no backend pair in this stack")
    releases: dict[str, tuple[str, str]] = {}
    for hardware in ("nvidia", "ascend"):
        workload, image, why = _backend_image(view, config, hardware)
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


def _optional_image(config: Any, key: str) -> str | None:
    """The image reference at `key`; None when absent or empty.

    Raises ConfigError naming the key when the value is not a string.
    """
    value = config.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{key} = {value!r} is not an image reference")
    return value or None


VERIFY_COMMAND = "dualstack verify-precision --stack <stack> --nvidia URL --ascend URL"
"""How an operator records a passing Ascend image (`dualstack/commands/verify_precision.py`)."""


@config_errors_are_violations
def precision_verified_before_promotion_validator(
    args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    """While Ascend serves traffic (weight > 0), the Ascend image served is the
    precision-verified one (config `verifiedAscendImage`, else the Ascend Deployment's
    `dualstack.io/verified-ascend-image` annotation): after a raise AND after every image
    change. Exceptions: weight 0 (no traffic) and a rollback, i.e. a weight below
    `previousWeight` serving the same image as `previousAscendImage` (the deployed one): a
    rollback is never blocked. A decrease that changes the image, or with no
    `previousAscendImage` to compare (fail closed), needs the check like a raise. With no
    `previousWeight` (first deploy) any weight > 0 needs it."""
    config = args.get_config()
    previous = config_int(config, "previousWeight", 0, 100)
    previous_image = _optional_image(config, "previousAscendImage")
    override = _optional_image(config, "verifiedAscendImage")
    view = StackView.of(args.resources)
    shares = ascend_shares(view, config)  # where traffic really goes, every route counted
    if not shares.routes:
        args.not_applicable("no VirtualService routes traffic")
    for message, urn in shares.problems:
        report_violation(f"cannot judge the Ascend share: {message}", urn)
    weight = shares.most
    if weight == 0:
        return  # no Ascend traffic: never blocked
    workload, image, why = _backend_image(view, config, "ascend")
    decrease = previous is not None and weight < previous
    if decrease and image is not None and image == previous_image:
        return  # a rollback to less traffic on the deployed image: never blocked
    if previous is None or weight > previous:
        move = f"raising the Ascend weight from {previous or 0}% to {percent(weight)}"
    elif decrease:
        lowering = f"lowering the Ascend weight from {previous}% to {percent(weight)}"
        move = (
            f"{lowering} while replacing the deployed image {previous_image}"
            if previous_image
            else f"{lowering} with no previousAscendImage to show the image is the deployed one"
        )
    else:
        move = f"with the Ascend weight at {percent(weight)}"
    if workload is None or image is None:
        report_violation(f"cannot check the Ascend image {move}: {why}", None)
        return
    verified = override or path(
        workload.props, "metadata", "annotations", VERIFIED_IMAGE_ANNOTATION
    )
    fix = (
        f"run the precision check for {image} and record its pass with `{VERIFY_COMMAND}` "
        "(against pods running that image), or set the weight to 0 while the new image is "
        "checked (weight 0, and a decrease that keeps the deployed image, are never blocked)"
    )
    if not verified:
        report_violation(
            f"{move}: {workload.label} serves {image} to live traffic, but no Ascend image is "
            f"precision-verified (stack config verifiedAscendImage); {fix}",
            workload.urn,
        )
    elif verified != image:
        report_violation(
            f"{move}: {workload.label} serves {image} to live traffic, but the "
            f"precision-verified image is {verified} (an image change resets the "
            f"verification); {fix}",
            workload.urn,
        )


POLICIES = [
    StackValidationPolicy(
        name="image-pair-consistent",
        description="Both backends' images are pinned (tag or digest, never latest) and come "
        "from the same release (tagPattern, e.g. v1.2.3-cuda / v1.2.3-npu).",
        validate=image_pair_consistent_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "tagPattern": {
                    "type": "string",
                    "default": DEFAULT_TAG_PATTERN,
                    "description": "Regular expression an image tag must match; its named "
                    "group `release` must be equal for both backends.",
                },
                **SUBSET_SCHEMAS,
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
        description="While Ascend serves traffic (weight > 0), its image is the one whose "
        "precision check passed, after a raise and after every image change (a decrease "
        "included); weight 0 and a rollback (a decrease keeping the deployed image) are never "
        "blocked.",
        validate=precision_verified_before_promotion_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "previousWeight": PREVIOUS_WEIGHT_SCHEMA,
                "previousAscendImage": {
                    "type": "string",
                    "description": "Ascend image of the BASE (deployed) stack config. A "
                    "decrease keeping this image is a rollback and needs no precision check; "
                    "absent, every weight > 0 needs it. Written by `dualstack policy-config "
                    "--base` and `dualstack preview --base`.",
                },
                "verifiedAscendImage": {
                    "type": "string",
                    "description": "Overrides the Ascend Deployment's annotation "
                    f"{VERIFIED_IMAGE_ANNOTATION}.",
                },
                **SHARE_SCHEMAS,
            }
        ),
    ),
]
"""The supply-chain policies, in report order."""
