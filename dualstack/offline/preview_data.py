"""A preview as plain data: one element of `stacks` in `dualstack/preview/v1` (docs/OUTPUT.md),
also embedded in the promote and rollback documents."""

from __future__ import annotations

from typing import Any

from components import ladder
from components.settings import HARDWARE
from components.settings.evidence import pair_verified
from components.workloads import replicas_for
from dualstack.offline.policy_results import PolicyResult
from dualstack.offline.preview import Preview, ServiceView


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


def service_data(view: ServiceView) -> dict[str, Any]:
    """One service of a preview: `{"service", "ascendWeight", "previousWeight",
    "ladderPosition", "nextStep", "replicas", "ascendImage", "ascendImageVerified"}`."""
    head, base = view.settings, view.base
    verified = base.verified if base is not None else []
    return {
        "service": head.name,
        "ascendWeight": head.ascend_weight,
        "previousWeight": view.previous_weight,
        "ladderPosition": ladder.position_text(head.ladder, head.ascend_weight),
        "nextStep": head.next_step,
        "replicas": {
            hw: {
                "before": base.replicas.get(hw) if base is not None else None,
                "after": replicas_for(head, hw),
            }
            for hw in HARDWARE
        },
        "ascendImage": head.ascend.image,
        "ascendImageVerified": pair_verified(
            verified,
            head.nvidia.image,
            head.ascend.image,
            base.images.get("nvidia") if base is not None else None,
        ),
    }


def preview_data(preview: Preview) -> dict[str, Any]:
    """The preview of one stack: weights, replicas, image, base, the safety-envelope changes,
    policies, object changes and the unified diff. The top-level service fields are the
    service asked (`service`; a fleet's first without `--service`), `services` lists every
    service of the stack the same way. `previousWeight` is null on a first deploy (no stack
    file at the base); `ascendImageVerified` is the BASE's record of the served pair;
    `changes[].change` is create, update or delete."""
    chosen = ServiceView(preview.head.settings, preview.base, preview.previous_weight)
    services = preview.services or [chosen]
    return {
        "stack": preview.stack,
        "passed": not preview.violations,
        **service_data(chosen),
        "services": [service_data(view) for view in services],
        "base": preview.base_label,
        "baseNote": preview.base_note,
        "judge": preview.judge_where,
        "envelope": [change.as_fact() for change in preview.envelope],
        "ownerApproved": preview.owner_approved,
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
