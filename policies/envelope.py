"""`safety-envelope-unchanged`: a pull request that changes more than a migration step needs
the owners' approval, and even approved it may not move traffic.

A step changes one stack's Ascend weight (one rung up, or down) and/or its images to a pair
the base already records as verified. Everything else (any other stack config key, the
evidence keys, any file of the program, the pack, the CLI, the checker, the dependency files
or the pipelines) is a change of the safety envelope: the facts every other policy judges
against. The judge computes those changes from the BASE's code (`dualstack policy-config`,
`dualstack preview`) and passes them as policy config `envelopeChanges`, with
`ownerApproved` set only from the code host's review state (a CODEOWNERS review on GitHub,
approval rules on GitLab). The pack imports nothing of the project.

Rules: no change passes; unapproved changes fail, one violation per fact, a weight decrease
included (else 20 -> 5 with ladder `[0, 5, 100]` would land unapproved and judge the next
step, 5 -> 100; the decrease alone, what `dualstack rollback` writes, has no envelope change
and always passes); approved changes pass with a decrease and fail when the same pull request
raises the Ascend weight or changes a served image (on a decrease too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
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
    mapping,
)
from policies.members import SERVICES_SCHEMA, per_service
from policies.stack_view import StackView, container_images
from policies.traffic_share import ascend_shares, backend_workload, percent

APPROVAL = (
    "an owner's approval (a CODEOWNERS review on GitHub, the approval rules on GitLab; the "
    "pipeline then passes --owner-approved)"
)


def envelope_changes(config: Mapping[str, Any]) -> list[str]:
    """The `envelopeChanges` entries as `fact: before -> after` lines.

    Raises ConfigError when the key is absent (no judge wrote the config: fail closed) or an
    entry is not a {fact, before, after} mapping of strings.
    """
    raw = config.get("envelopeChanges")
    if raw is None:
        raise ConfigError(
            "envelopeChanges is absent: the base's judge did not write this config, so the "
            "envelope cannot be checked"
        )
    if isinstance(raw, str) or not isinstance(raw, Sequence):
        raise ConfigError(f"envelopeChanges = {raw!r} is not a list")
    lines = []
    for entry in raw:
        entry = mapping(entry)
        fields = [entry.get(key) for key in ("fact", "before", "after")]
        if not all(isinstance(field, str) for field in fields):
            raise ConfigError(f"envelopeChanges entry {dict(entry)!r} lacks fact/before/after")
        fact, before, after = fields
        where = f"file {fact}" if entry.get("kind") == "file" else fact
        lines.append(f"{where}: {before} -> {after}")
    return lines


def _served(view: StackView, config: Mapping[str, Any]) -> tuple[Fraction | None, dict[str, Any]]:
    """(the largest Ascend share any route sends, in %, None without routes; {hardware: first
    app container image}). The share is where traffic really goes, under either router
    (`policies.traffic_share`), and so are the backends (`backend_workload`)."""
    shares = ascend_shares(view, config)
    weight = shares.most if shares.routes else None
    images = {}
    for hardware in ("nvidia", "ascend"):
        workload, _why = backend_workload(view, config, hardware)
        found = container_images(workload) if workload is not None else []
        images[hardware] = found[0][1] if found else None
    return weight, images


def _safety_envelope_unchanged(
    args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    """Fail each envelope change without `ownerApproved` (a decrease too); with it, fail a
    raise of the Ascend weight above `previousWeight` or a served image other than
    `previousImages`, at any weight (an approved decrease too: 20 -> 5 may not swap the NVIDIA
    image that serves the other 95 %)."""
    config = args.get_config()
    changes = envelope_changes(config)
    if not changes:
        return
    approved = config.get("ownerApproved")
    if approved is not None and not isinstance(approved, bool):
        raise ConfigError(f"ownerApproved = {approved!r} is not true or false")
    previous = config_int(config, "previousWeight", 0, 100)
    weight, images = _served(StackView.of(args.resources), config)
    if not approved:
        # Also with a decrease: the change would land unapproved and judge the next step
        # (20 -> 5 with ladder [0, 5, 100], then 5 -> 100). The decrease alone always passes.
        for change in changes:
            report_violation(
                f"{change}: a change of the safety envelope (beyond ascendWeight and the image "
                f"pair) needs {APPROVAL}; or split it from the migration step (a weight "
                "decrease alone always passes)",
                None,
            )
        return
    moves = []  # an approved decrease keeping both images passes; one changing them does not
    if weight is not None and weight > (previous or 0):
        moves.append(f"raises the Ascend weight from {previous or 0}% to {percent(weight)}")
    before = {str(k): v for k, v in mapping(config.get("previousImages")).items()}
    for hardware, image in images.items():
        if before and before.get(hardware) != image:
            moves.append(f"changes the {hardware} image {before.get(hardware)} -> {image}")
    if moves:
        report_violation(
            f"the owners approved envelope changes ({'; '.join(changes)}), but the same pull "
            f"request {' and '.join(moves)}: land the envelope change first, then the step in "
            "its own pull request",
            None,
        )


safety_envelope_unchanged_validator = per_service(
    config_errors_are_violations(_safety_envelope_unchanged)
)
"""`_safety_envelope_unchanged` wrapped by `per_service` and `config_errors_are_violations`
(applied by call, not with `@`: mutmut mutates no decorated function)."""


IMAGES_SCHEMA = {
    "type": "object",
    "properties": {"nvidia": {"type": "string"}, "ascend": {"type": "string"}},
    "description": "The images the BASE (deployed) config serves, by hardware.",
}

POLICIES = [
    StackValidationPolicy(
        name="safety-envelope-unchanged",
        description="A change beyond the Ascend weight and the verified image pair (config, "
        "evidence, program, pack, CLI, dependencies, pipelines) needs the owners' approval, "
        "and even approved may not raise the weight or change a served image; a weight "
        "decrease alone is never blocked.",
        validate=safety_envelope_unchanged_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "envelopeChanges": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "fact": {"type": "string"},
                            "before": {"type": "string"},
                            "after": {"type": "string"},
                            "kind": {"type": "string"},
                        },
                        "required": ["fact", "before", "after"],
                    },
                    "description": "Every change of the safety envelope between the base and "
                    "the head, computed by the base's judge (`dualstack policy-config`). "
                    "Absent: the policy fails (fail closed).",
                },
                "ownerApproved": {
                    "type": "boolean",
                    "default": False,
                    "description": "True only when the code host reports the owners' approval "
                    "(CODEOWNERS review, GitLab approval rules); set by the pipeline.",
                },
                "previousWeight": PREVIOUS_WEIGHT_SCHEMA,
                "previousImages": IMAGES_SCHEMA,
                "services": SERVICES_SCHEMA,
                **SUBSET_SCHEMAS,
                **SHARE_SCHEMAS,
            }
        ),
    )
]
"""The envelope policy."""
