"""The policy pack's config: built from a stack's settings and the deployed Ascend weight.

A policy sees only the new inputs (REFERENCE.md, CrossGuard), so whatever it compares against
comes through config. The same `pack_config()` feeds both paths:

- online: `dualstack policy-config --stack prod --from-stack-output -o policy-config.json`, then
  `pulumi preview --policy-pack policies --policy-pack-config policy-config.json`; the
  previous weight is the DEPLOYED one (`pulumi stack output ascendWeight`), which beats git
  history (reverts and skipped deploys make history unreliable);
- offline: `dualstack preview --base REF` with the weight of the stack config at REF.

What the change under review must not decide for itself comes from the BASE stack config (the
config at `--base REF`, online and offline): the step limit of `no-unsafe-weight-jump`
(`ladder`, `maxStep`) and the deployed Ascend image (`previousAscendImage`, which tells a
rollback from an image change). Without a base they fall back to the head's config (ladder,
maxStep) or stay absent (previousAscendImage: every weight > 0 then needs the precision check).
The BASE's rendered objects give `previousPodTemplates` (`template_facts`): which Deployments
only scale, so `pool-capacity` counts no rollout surge for them; absent, every one surges.

The file's shape is Pulumi's `--policy-pack-config` format: `{"<policy>": {"<key>": value}}`,
each policy getting only the keys its `PolicyConfigSchema` declares, plus `enforcementLevel`
for the policies whose level a setting chooses (`ENFORCEMENT`), also taken from the base.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from components.naming import POOL_LABEL
from components.settings import HARDWARE, TOTAL_WEIGHT, Settings, SettingsError, load_settings
from dualstack.repo.stackfile import StackFileError, read_config_at
from policies import POLICIES

NOT_FROM_SETTINGS = frozenset({"verifiedAscendImage"})
"""Schema keys `pack_config` leaves out on purpose: the program records the verified image as
the Ascend Deployment's annotation `dualstack.io/verified-ascend-image`, one source for both
paths; the key stays available to override it by hand."""


FROM_BASE = {"no-unsafe-weight-jump": frozenset({"ladder", "maxStep"})}
"""Per policy, the config keys taken from the BASE settings when there is a base: the step
limit is the deployed config's, so a change cannot widen its own step by editing the ladder or
`policy.maxStep` in the stack file it brings."""

ALWAYS_FROM_BASE = frozenset({"testerPinning"})
"""Config keys every policy takes from the BASE settings when there is a base: the tester-pin
header and values, which decide which rules the Ascend share leaves out (`policies.pins`); a
change cannot declare its own catch-all route a pin."""


ENFORCEMENT = {
    "images-pinned-by-digest": lambda settings: (
        "mandatory" if settings.security.require_image_digests else "advisory"
    ),
}
"""Per policy, its enforcement level as the stack's settings choose it
(`security.requireImageDigests`). Taken from the BASE settings when there is a base, so a
change cannot relax the rule it is judged by; a change that turns it on applies from the next
change on."""


def settings_facts(
    settings: Settings, previous_weight: int | None, base: Settings | None = None
) -> dict[str, Any]:
    """Every policy config value the stack's settings determine, by config key.

    `base` is the BASE (deployed) stack's settings, None without one; it gives
    `previousAscendImage`. Keys whose value is None are left out: `previousWeight` (first
    deploy), `maxStep` (not set), `previousAscendImage` (no base).
    """
    facts: dict[str, Any] = {
        "ladder": list(settings.ladder),
        "previousWeight": previous_weight,
        "previousAscendImage": base.ascend.image if base is not None else None,
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


def pack_config(
    settings: Settings,
    previous_weight: int | None,
    base: Settings | None = None,
    base_objects: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """The `--policy-pack-config` content for a stack: {policy name: {config key: value}}.

    `settings` is the head (the change judged); `previous_weight` the deployed Ascend weight in
    % (None on a first deploy, when only 0 or the first ladder step may be deployed); `base`
    the BASE stack's settings (None without a base), which give the keys in `FROM_BASE`,
    `previousAscendImage` and the levels in `ENFORCEMENT`; `base_objects` the BASE's rendered
    objects (None: unknown), which give `previousPodTemplates` (`template_facts`).
    """
    facts = settings_facts(settings, previous_weight, base)
    if base_objects is not None:
        facts["previousPodTemplates"] = template_facts(base_objects)
    base_facts = settings_facts(base, previous_weight, base) if base is not None else facts
    config: dict[str, dict[str, Any]] = {}
    for policy in POLICIES:
        keys = policy.config_schema.properties if policy.config_schema else {}
        from_base = FROM_BASE.get(policy.name, frozenset()) | ALWAYS_FROM_BASE
        values = {}
        for key in keys:
            source = base_facts if key in from_base else facts
            if key in source:
                values[key] = source[key]
        if level := ENFORCEMENT.get(policy.name):
            values["enforcementLevel"] = level(base if base is not None else settings)
        if values:
            config[policy.name] = values
    return config


def base_settings_at(root: Path, stack: str, ref: str) -> Settings | None:
    """The settings of `Pulumi.<stack>.yaml` at git `ref` (the base); None when the file did
    not exist there (a new stack: nothing to take the step limit from).

    Raises StackFileError when `ref` is not a commit, the file does not parse, or its config
    no longer validates (fail closed: no config is written rather than one built from the
    head's own step limit).
    """
    config = read_config_at(root, stack, ref)
    if config is None:
        return None
    try:
        return load_settings(config)
    except SettingsError as exc:
        raise StackFileError(
            f"Pulumi.{stack}.yaml at {ref} (--base) does not validate, so it cannot give the "
            f"step limit: {str(exc).splitlines()[0]}"
        ) from None


def write_config(config: dict[str, Any], output: Path | None) -> str:
    """The config as JSON text (sorted keys), also written to `output` when given."""
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    if output is not None:
        output.write_text(text, encoding="utf-8")
    return text
