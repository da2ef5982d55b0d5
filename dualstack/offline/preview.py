"""The reviewer's offline preview: head against base, object by object, line by line.

`build_preview()` renders the stack from the working tree's config and, when a base ref is
given, from the config at that ref (both with the current code), runs the policy pack over the
head's objects (previous weight, step limit, previous Ascend image and deployed pod templates
= the base's; none without a base, i.e. a first deploy) and reports the weight move, the replica
move, each policy's result, each object's change and a unified diff.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.settings import HARDWARE, Settings, SettingsError
from components.workloads import replicas_for
from dualstack.offline.diff import ObjectChange, object_changes, unified_diff
from dualstack.offline.policy_config import pack_config
from dualstack.offline.policy_run import PolicyResult, blocking, report_lines, run_policies
from dualstack.offline.render import render, sort_key
from dualstack.offline.schemas import validate_objects
from dualstack.repo.baseref import describe
from dualstack.repo.stack_config import load_stack_config
from dualstack.repo.stackfile import read_config_at


@dataclass(frozen=True)
class Side:
    """One rendered side of the comparison."""

    settings: Settings
    objects: list[dict[str, Any]]


@dataclass(frozen=True)
class Preview:
    """What `dualstack preview` reports. `base` is None when there is nothing to compare."""

    stack: str
    head: Side
    base: Side | None
    base_label: str | None
    base_note: str | None = None
    changes: list[ObjectChange] = field(default_factory=list)
    diff: str = ""
    policy_results: list[PolicyResult] = field(default_factory=list)
    """The policy pack's results over the head (see `dualstack.offline.policy_run`)."""

    @property
    def previous_weight(self) -> int | None:
        """The Ascend weight at the base, or None without a base (first deploy)."""
        return self.base.settings.ascend_weight if self.base else None

    @property
    def violations(self) -> list[PolicyResult]:
        """The mandatory policy violations: `dualstack preview` exits 1 when there are any."""
        return blocking(self.policy_results)


def check_policies(
    head: Side,
    previous_weight: int | None,
    stack: str,
    base: Settings | None = None,
    base_objects: list[dict[str, Any]] | None = None,
) -> list[PolicyResult]:
    """Run the policy pack over the head's objects with the config `dualstack policy-config
    --base` would write for `previous_weight` (None: judged as a first deploy), the `base`
    settings (the step limit and the previous Ascend image; None: no base) and the base's
    rendered objects (the deployed pod templates, so `pool-capacity` counts no surge for a
    Deployment that only scales; None: unknown, every one surges)."""
    config = pack_config(head.settings, previous_weight, base, base_objects)
    return run_policies(head.objects, config, stack)


def build_preview(
    root: Path, stack: str, base_ref: str | None, overrides: Iterable[str] = ()
) -> Preview:
    """Render head (working tree + overrides) and base (config at `base_ref`) and compare.

    Raises SettingsError/SchemaError for an invalid head; an unrenderable base is reported
    in `base_note`, not raised, since the head is what would be applied.
    """
    head_settings, head_objects = render(load_stack_config(root, stack, overrides), stack)
    validate_objects(head_objects)
    head = Side(head_settings, head_objects)

    def without_base(label: str | None, why: str) -> Preview:
        note = f"{why}; policies judge a first deploy"
        return Preview(
            stack, head, None, label, note, policy_results=check_policies(head, None, stack)
        )

    if base_ref is None:
        return without_base(None, "no base ref: nothing to compare against")
    label = describe(root, base_ref)
    base_config = read_config_at(root, stack, base_ref)
    if base_config is None:
        return without_base(label, f"Pulumi.{stack}.yaml does not exist at {label}")
    try:
        base_settings, base_objects = render(base_config, stack)
    except SettingsError as exc:
        why = f"the config at {label} no longer validates: {str(exc).splitlines()[0]}"
        return without_base(label, why)
    base = Side(base_settings, base_objects)
    return Preview(
        stack,
        head,
        base,
        label,
        changes=object_changes(base_objects, head_objects),
        diff=unified_diff(base_objects, head_objects, "base", "head"),
        policy_results=check_policies(
            head, base_settings.ascend_weight, stack, base_settings, base_objects
        ),
    )


def weight_line(preview: Preview) -> str:
    """`Ascend weight: 5% -> 20% (ladder step 2 of 5, next 50%)`."""
    settings = preview.head.settings
    last = len(settings.ladder) - 1
    step = f"ladder step {settings.ladder_position} of {last}"
    step += f", next {settings.next_step}%" if settings.next_step is not None else ", complete"
    before = preview.previous_weight
    moved = f"{before}% -> " if before is not None and before != settings.ascend_weight else ""
    if before == settings.ascend_weight:
        moved = "unchanged at "
    return f"Ascend weight: {moved}{settings.ascend_weight}% ({step})"


def replicas_line(preview: Preview) -> str:
    """`Replicas: nvidia 4 -> 4, ascend 1 -> 2`."""
    parts = []
    for hw in HARDWARE:
        now = replicas_for(preview.head.settings, hw)
        was = replicas_for(preview.base.settings, hw) if preview.base else None
        parts.append(f"{hw} {was} -> {now}" if was is not None and was != now else f"{hw} {now}")
    return "Replicas: " + ", ".join(parts)


def policy_lines(preview: Preview) -> list[str]:
    """The policy section: summary, then violations, advisories and passes, one per line."""
    before = preview.previous_weight
    context = f"previous weight {before}%" if before is not None else "no previous weight"
    return report_lines(preview.policy_results, context)


def format_preview(preview: Preview) -> str:
    """The human report: header lines, object list, then the unified diff."""
    lines = [f"Stack {preview.stack}", weight_line(preview), replicas_line(preview)]
    verified = preview.head.settings.ascend_image_verified
    image = preview.head.settings.ascend.image
    lines.append(f"Ascend image: {image} ({'precision-verified' if verified else 'NOT verified'})")
    if preview.base_label:
        lines.append(f"Base: {preview.base_label}")
    if preview.base_note:
        lines.append(f"Note: {preview.base_note}")
    lines += policy_lines(preview)
    if preview.base is None:
        lines.append(f"Objects: {len(preview.head.objects)} (no base to compare)")
        lines += [
            f"  {ObjectChange(sort_key(o), 'create').describe()}" for o in preview.head.objects
        ]
    else:
        counts = {
            kind: sum(1 for c in preview.changes if c.change == kind)
            for kind in ("create", "update", "delete")
        }
        lines.append(
            f"Objects: {len(preview.head.objects)} ({counts['update']} changed, "
            f"{counts['create']} added, {counts['delete']} removed)"
        )
        lines += [f"  {change.describe()}" for change in preview.changes]
        lines.append("")
        lines.append(preview.diff.rstrip("\n") if preview.diff else "No changes to any object.")
    return "\n".join(lines) + "\n"
