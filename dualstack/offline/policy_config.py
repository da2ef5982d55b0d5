"""The policy pack's config: the facts every policy compares against, taken from the BASE.

A policy sees only the new inputs (REFERENCE.md, CrossGuard), so whatever it compares against
comes through config. `pack_config()` builds it in the BASE's code (`dualstack.offline.judge`:
`dualstack preview`, `dualstack policy-config`), for both paths:

- online: `dualstack policy-config ... -o policy-config.json`, then `pulumi preview
  --policy-pack base-checkout/policies --policy-pack-config policy-config.json`; the previous
  weight is the DEPLOYED one (`pulumi stack output ascendWeight`), which beats git history;
- offline: `dualstack preview --base REF` with the weight of the stack config at REF.

A pull request never judges itself: the step limit (`ladder`, `maxStep`), the capacity and
pool facts, the accelerator resources, the allowed driver paths, the release tag pattern, the
deployed images and the verification history all come from the BASE stack config. The head's
own values count only where the owners approved the envelope change that brings them
(`owner_approved`), and never for the evidence (`verifiedImages`, always the base's). On a
first deploy (no stack file at the base) the head's values are all there is, and nothing is
verified yet.

The file's shape is Pulumi's `--policy-pack-config` format: `{"<policy>": {"<key>": value}}`,
each policy getting only the keys its `PolicyConfigSchema` declares.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from components.naming import POOL_LABEL
from components.settings import HARDWARE, TOTAL_WEIGHT, Settings
from dualstack.offline.envelope import EnvelopeChange
from policies import POLICIES

NOT_FROM_SETTINGS = frozenset({"verifiedAscendImage"})
"""Schema keys `pack_config` leaves out on purpose: policy config `verifiedAscendImage` adds one
verified Ascend image by hand; the judge writes the base's record as `verifiedImages`."""


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
        "driverHostPaths": sorted(
            {path for hw in HARDWARE if (path := settings.hardware(hw).driver_host_path)}
        ),
    }
    return {key: value for key, value in facts.items() if value is not None}


def base_render_facts(objects: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Policy config drawn from the BASE's rendered objects, by key (the hook for facts such
    as the previous pod templates); none so far."""
    del objects
    return {}


def pack_config(
    settings: Settings,
    previous_weight: int | None,
    base: Settings | None = None,
    base_objects: Sequence[Mapping[str, Any]] | None = None,
    envelope: Iterable[EnvelopeChange] | None = None,
    owner_approved: bool = False,
) -> dict[str, dict[str, Any]]:
    """The `--policy-pack-config` content for a stack: {policy name: {config key: value}}.

    `settings` is the head (the change judged); `previous_weight` the deployed Ascend weight in
    % (None on a first deploy, when only 0 or the first ladder step may be deployed); `base`
    the BASE stack's settings (None on a first deploy), whose facts are the judged ones unless
    `owner_approved`; `base_objects` the base's rendered objects (facts drawn from the base
    render); `envelope` the changes of the safety envelope (None: not computed, so policy
    `safety-envelope-unchanged` fails closed); `owner_approved` whether the code host reports
    the owners' approval.
    """
    judged = settings if base is None or owner_approved else base
    facts = settings_facts(judged, previous_weight, base)
    if envelope is not None:
        facts["envelopeChanges"] = [change.as_fact() for change in envelope]
    facts["ownerApproved"] = owner_approved
    if base_objects is not None:
        facts.update(base_render_facts(base_objects))
    config: dict[str, dict[str, Any]] = {}
    for policy in POLICIES:
        keys = policy.config_schema.properties if policy.config_schema else {}
        values = {key: facts[key] for key in keys if key in facts}
        if values:
            config[policy.name] = values
    return config


def write_config(config: dict[str, Any], output: Path | None) -> str:
    """The config as JSON text (sorted keys), also written to `output` when given."""
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    if output is not None:
        output.write_text(text, encoding="utf-8")
    return text
