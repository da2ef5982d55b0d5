"""A preview as plain data: one element of `stacks` in `dualstack/preview/v1` (docs/OUTPUT.md),
also embedded in the promote and rollback documents."""

from __future__ import annotations

from typing import Any

from components.settings import HARDWARE
from components.workloads import replicas_for
from dualstack.offline.policy_run import PolicyResult
from dualstack.offline.preview import Preview


def policy_data(result: PolicyResult) -> dict[str, Any]:
    """`{"policy", "enforcement", "outcome", "resource", "message"}`; outcome is pass,
    violation (mandatory: blocks), advisory or disabled."""
    return {
        "policy": result.policy,
        "enforcement": result.enforcement,
        "outcome": result.outcome,
        "resource": result.resource,
        "message": result.message,
    }


def preview_data(preview: Preview) -> dict[str, Any]:
    """The preview of one stack: weights, replicas, image, base, policies, object changes and
    the unified diff. `previousWeight` is null without a base (judged as a first deploy);
    `changes[].change` is create, update or delete."""
    head = preview.head.settings
    base = preview.base.settings if preview.base else None
    return {
        "stack": preview.stack,
        "passed": not preview.violations,
        "ascendWeight": head.ascend_weight,
        "previousWeight": preview.previous_weight,
        "ladderPosition": f"{head.ladder_position}/{len(head.ladder) - 1}",
        "nextStep": head.next_step,
        "replicas": {
            hw: {
                "before": replicas_for(base, hw) if base is not None else None,
                "after": replicas_for(head, hw),
            }
            for hw in HARDWARE
        },
        "ascendImage": head.ascend.image,
        "ascendImageVerified": head.ascend_image_verified,
        "base": preview.base_label,
        "baseNote": preview.base_note,
        "policies": [policy_data(r) for r in preview.policy_results],
        "violations": sorted({r.policy for r in preview.violations}),
        "objects": len(preview.head.objects),
        "changes": [
            {
                "kind": change.key[0],
                "namespace": change.key[1] or None,
                "name": change.key[2],
                "change": change.change,
            }
            for change in preview.changes
        ],
        "diff": preview.diff,
    }
