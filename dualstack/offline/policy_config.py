"""The policy pack's config: the facts every policy compares against, taken from the BASE.

A policy sees only the new inputs (REFERENCE.md, CrossGuard), so whatever it compares against
comes through config. `pack_config()` builds it in the BASE's code (`dualstack.offline.judge`:
`dualstack preview`, `dualstack policy-config`), for both paths:

- online: `dualstack policy-config ... --output policy-config.json`, then `pulumi preview
  --policy-pack base-checkout/policies --policy-pack-config policy-config.json`; the previous
  weight is the DEPLOYED one (`pulumi stack output ascendWeight`), which beats git history;
- offline: `dualstack preview --base REF` with the weight of the stack config at REF.

A pull request never judges itself: the step limit (`ladder`, `maxStep`), the capacity and
pool facts, the accelerator resources, the allowed driver paths, the release tag pattern, the
deployed images and the verification history all come from the BASE stack config. The head's
own values count only where the owners approved the envelope change that brings them
(`owner_approved`), and never for the evidence (`verifiedImages`, always the base's). On a
first deploy (no stack file at the base) the head's values are all there is, and nothing is
verified yet. The BASE's rendered objects give `previousPodTemplates` (`template_facts`):
which Deployments only scale, so `pool-capacity` counts no rollout surge for them; absent,
every one surges.

The file's shape is Pulumi's `--policy-pack-config` format: `{"<policy>": {"<key>": value}}`,
each policy getting only the keys its `PolicyConfigSchema` declares, plus `enforcementLevel`
for the policies whose level a setting chooses (`ENFORCEMENT`), also the judged settings'.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from components.naming import POOL_LABEL
from components.settings import HARDWARE, TOTAL_WEIGHT, Fleet, Settings
from dualstack.offline.envelope import EnvelopeChange
from dualstack.repo.atomic import write_file
from policies import POLICIES

NOT_FROM_SETTINGS = frozenset({"verifiedAscendImage"})
"""Schema keys `pack_config` leaves out on purpose: policy config `verifiedAscendImage` adds one
verified Ascend image by hand; the judge writes the base's record as `verifiedImages`."""


ENFORCEMENT = {
    "images-pinned-by-digest": lambda settings: (
        "mandatory" if settings.security.require_image_digests else "advisory"
    ),
}
"""Per policy, its enforcement level as the stack's settings choose it
(`security.requireImageDigests`). Taken from the judged settings (the BASE's unless the
owners approved), so a change cannot relax the rule it is judged by; a change that turns it on
applies from the next change on."""


def settings_facts(
    settings: Settings, previous_weight: int | None, base: Settings | None = None
) -> dict[str, Any]:
    """Every policy config value the stack's settings determine, by config key.

    `settings` gives the facts (the BASE's, or the head's on a first deploy or an approved
    envelope change); `base` is the BASE (deployed) stack's settings, None on a first deploy:
    it gives `previousAscendImage`, `previousImages` and `verifiedImages` (empty without a
    base). Keys whose value is None are left out: `previousWeight` (first deploy), `maxStep`
    (not set), the previous images (no base).
    """
    facts: dict[str, Any] = {
        "ladder": list(settings.ladder),
        "previousWeight": previous_weight,
        "previousAscendImage": base.ascend.image if base is not None else None,
        "previousImages": (
            {hw: base.hardware(hw).image for hw in HARDWARE} if base is not None else None
        ),
        "verifiedImages": base.verified_facts if base is not None else [],
        "maxStep": settings.policy.max_step,
        "tagPattern": settings.policy.release_tag_pattern,
        "nvidiaSubset": HARDWARE[0],
        "ascendSubset": HARDWARE[1],
        "ascendResource": settings.ascend.accelerator_resource,
        "totalWeight": TOTAL_WEIGHT,
        "totalReplicas": settings.capacity.total_replicas,
        "ascendCapacityRatio": settings.capacity.ascend_capacity_ratio,
        "acceleratorPools": {
            settings.hardware(hw).accelerator_resource: settings.hardware(hw).pool.name
            for hw in HARDWARE
        },
        "poolLabel": POOL_LABEL,
        "poolSizes": {
            settings.hardware(hw).pool.name: {
                "nodes": len(settings.hardware(hw).pool.nodes),
                "acceleratorsPerNode": settings.hardware(hw).pool.accelerators_per_node,
            }
            for hw in HARDWARE
        },
        "testerPinning": {
            "header": settings.tester_pinning.header,
            "nvidia": settings.tester_pinning.nvidia,
            "ascend": settings.tester_pinning.ascend,
        },
        "driverHostPaths": sorted(
            {path for hw in HARDWARE if (path := settings.hardware(hw).driver_host_path)}
        ),
    }
    return {key: value for key, value in facts.items() if value is not None}


SERVICE_FACTS = (
    "previousWeight",
    "previousAscendImage",
    "previousImages",
    "verifiedImages",
    "totalReplicas",
    "ascendCapacityRatio",
)
"""The facts that belong to one service of a fleet: under policy config `services.<name>`
(`policies.members`), never at the stack level of a fleet's config."""

FLEET_ONLY = frozenset({"services"})
"""Schema keys only a fleet's config carries (`fleet_facts`); a single-service stack's has
none of them."""

Weights = Mapping[str, int | None]
"""Deployed weights in %, {service: weight}: a service missing, or None, was never deployed
({} on a first deploy)."""


def fleet_facts(
    judged: Fleet,
    head: Fleet,
    previous: Mapping[str, int | None],
    base: Fleet | None,
) -> dict[str, Any]:
    """Every policy config value of a fleet: the stack's facts from `judged` (the pools, the
    ladder, ...) without the per-service ones, and `services`: {name: that service's facts}
    for every service of the head, from its `judged` settings when it has them (else the
    head's: a new service), its deployed weight `previous[name]` and its BASE record (none for
    a new service: no previous image, nothing verified)."""
    facts = settings_facts(judged.first, None, None)
    for key in SERVICE_FACTS:
        facts.pop(key, None)
    services = {}
    for name, settings in head.members.items():
        own = judged.members.get(name, settings)
        deployed = base.members.get(name) if base is not None else None
        each = settings_facts(own, previous.get(name), deployed)
        each.setdefault("verifiedImages", [])
        services[name] = {key: each[key] for key in SERVICE_FACTS if key in each}
    facts["services"] = services
    return facts


def _canonical(value: Any) -> Any:
    """`value` as plain JSON data: mappings -> dicts, sequences -> lists, whole floats -> ints
    (the pack sees engine floats, `replicas: 4.0`; the render gives ints)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [_canonical(v) for v in value]
    return value


def template_hash(template: Any) -> str:
    """sha256 hex digest of the canonical JSON (sorted keys, separators `,` `:`, whole numbers
    as ints) of a pod template. The pack computes the same (`policies.pod_counts.
    template_hash`, duplicated there because the pack imports nothing of the project; a test
    keeps both equal)."""
    text = json.dumps(_canonical(template), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def template_facts(objects: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Policy config `previousPodTemplates` from rendered objects (the BASE's): {Deployment
    metadata.name: `template_hash` of its spec.template}.

    A name held by two Deployments (other namespaces) is left out: its template is unknown,
    so `pool-capacity` counts its surge (fail closed).
    """
    digests: dict[str, str] = {}
    seen: set[str] = set()
    for obj in objects:
        name = (obj.get("metadata") or {}).get("name")
        if obj.get("kind") != "Deployment" or not name:
            continue
        if name in seen:
            digests.pop(name, None)
            continue
        seen.add(name)
        digests[name] = template_hash((obj.get("spec") or {}).get("template"))
    return digests


def single_weight(previous: Weights) -> int | None:
    """Policy config `previousWeight` of a single-service stack (the pack's own shape, kept):
    its one service's deployed weight, whatever the service is called (a renamed
    `service.name` is still the deployed one), None when never deployed."""
    return next(iter(previous.values()), None)


def one_service(head: Fleet, base: Fleet | None, previous: Weights) -> tuple[Fleet | None, Weights]:
    """(base, previous weights) as the head lays out its service: a conversion between a stack
    without `services` and a fleet of one (either way) keeps the one service, so the base's
    service is the head's, under the head's name and in its shape (`Fleet.laid_out_as`),
    with its deployed weight (not a raise from 0) and its images and verified pairs (not a
    new service without a record). Anything else is returned as it is."""
    if base is None or base.laid_out_as(head) is base:
        return base, previous
    return base.laid_out_as(head), {head.names[0]: previous.get(base.names[0])}


def pack_config(
    settings: Fleet,
    previous_weight: Weights,
    base: Fleet | None = None,
    base_objects: Iterable[Mapping[str, Any]] | None = None,
    envelope: Iterable[EnvelopeChange] | None = None,
    owner_approved: bool = False,
) -> dict[str, dict[str, Any]]:
    """The `--policy-pack-config` content for a stack: {policy name: {config key: value}}.

    `settings` is the head's fleet (the change judged); `previous_weight` the deployed Ascend
    weights, {service: weight in %} ({} on a first deploy, when only 0 or the first ladder
    step may be deployed); `base` the BASE stack's fleet (None on a first deploy), whose
    facts (and the levels in `ENFORCEMENT`) are the judged ones unless `owner_approved`;
    `base_objects` the BASE's rendered objects (None: unknown), which give
    `previousPodTemplates` (`template_facts`);
    `envelope` the changes of the safety envelope (None: not computed, so policy
    `safety-envelope-unchanged` fails closed); `owner_approved` whether the code host reports
    the owners' approval.

    This is the one place the pack's two config shapes are made: a declared fleet gets its
    per-service facts under `services` (`fleet_facts`), a single-service stack's config is as
    it always was (`settings_facts`, `previousWeight` one number: `single_weight`); one
    converted to a fleet of one, or back, is judged as the same service (`one_service`).
    """
    head_fleet, base_fleet = settings, base
    base_fleet, previous_weight = one_service(head_fleet, base_fleet, previous_weight)
    judged_fleet = head_fleet if base_fleet is None or owner_approved else base_fleet
    judged = judged_fleet.first
    if head_fleet.declared or (base_fleet is not None and base_fleet.declared):
        facts = fleet_facts(judged_fleet, head_fleet, previous_weight, base_fleet)
    else:
        single = single_weight(previous_weight)
        facts = settings_facts(judged, single, base_fleet.first if base_fleet else None)
    if envelope is not None:
        facts["envelopeChanges"] = [change.as_fact() for change in envelope]
    facts["ownerApproved"] = owner_approved
    if base_objects is not None:
        facts["previousPodTemplates"] = template_facts(base_objects)
    config: dict[str, dict[str, Any]] = {}
    for policy in POLICIES:
        keys = policy.config_schema.properties if policy.config_schema else {}
        values = {key: facts[key] for key in keys if key in facts}
        if level := ENFORCEMENT.get(policy.name):
            values["enforcementLevel"] = level(judged)
        if values:
            config[policy.name] = values
    return config


def write_config(config: dict[str, Any], output: Path | None) -> str:
    """The config as JSON text (sorted keys), also written to `output` when given."""
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    if output is not None:
        write_file(output, text)
    return text
