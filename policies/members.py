"""The services of a fleet stack, as the stack policies see them: which objects are whose, and
the per-service policy config.

Each service's objects carry its name as the `app` label (the precision check's as
`app.kubernetes.io/part-of`); objects with neither (the NodePatches of the pools) belong to the
whole stack. The base's judge writes the per-service facts as policy config `services`:
`{"<name>": {"previousWeight": 20, "previousImages": {...}, "verifiedImages": [...],
"totalReplicas": 4, ...}}`, each laid over the stack's own config for that service.

`per_service(validator)` runs a stack validator once per service, over that service's objects
plus the shared ones, with its facts: the step rule, the verified images, the image pair, the
rollback capacity and the envelope's "no raise with an approved envelope" judge each service on
its own. A service of the head the base has no facts for (a new service) is judged with the
stack's config alone: no previous weight (a first deploy: 0 or the first rung) and no verified
image. Without `services` (a single-service stack) the validator runs once over everything,
exactly as before. Violations that several services report alike are reported once, naming
them (none when every service reports it: a fact of the whole stack).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs
from pulumi_policy.policy import _NotApplicableError  # what `args.not_applicable()` raises

from policies.common import ConfigError, mapping, path

SERVICE_LABEL = "app"
"""The label naming the service an object belongs to (`components.naming.pod_labels`)."""
PART_OF_LABEL = "app.kubernetes.io/part-of"
"""The precision check's objects name their service here (no `app`: no traffic to them)."""

SERVICES_SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": "object"},
    "description": "A fleet's per-service facts: service name (its `app` label) -> the facts "
    "of that service (previousWeight, previousImages, previousAscendImage, verifiedImages, "
    "totalReplicas, ascendCapacityRatio), laid over this policy's config for its objects. "
    "Absent for a single-service stack. Written by the base's judge.",
}


def service_of(resource: Any) -> str | None:
    """The service a resource belongs to: its `app` label, else `app.kubernetes.io/part-of`;
    None for a shared object (the pools' NodePatches)."""
    labels = mapping(path(mapping(getattr(resource, "props", {})), "metadata", "labels"))
    name = labels.get(SERVICE_LABEL) or labels.get(PART_OF_LABEL)
    return str(name) if isinstance(name, str) and name else None


def services_config(config: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]] | None:
    """Config `services` as {name: facts}; None when absent (a single-service stack).

    Raises ConfigError when it is not a mapping of mappings.
    """
    raw = config.get("services")
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not all(isinstance(v, Mapping) for v in raw.values()):
        raise ConfigError(f"services = {raw!r} is not a map of service name -> facts")
    return {str(name): facts for name, facts in raw.items()}


@dataclass(frozen=True)
class Member:
    """One service of the stack as a stack validator sees it: its objects (plus the shared
    ones) and its config. `name` is None for a single-service stack."""

    name: str | None
    resources: list[Any]
    config: Mapping[str, Any]


def members(resources: Iterable[Any], config: Mapping[str, Any]) -> list[Member]:
    """The stack split by service (see the module docstring), in first-seen order: every
    service with facts in `services`, then any other service the objects name.

    Raises ConfigError for a malformed `services`.
    """
    services = services_config(config)
    resources = list(resources)
    if services is None:
        return [Member(None, resources, config)]
    shared = {key: value for key, value in config.items() if key != "services"}
    grouped: dict[str, list[Any]] = {name: [] for name in services}
    common = []
    for resource in resources:
        name = service_of(resource)
        if name is None:
            common.append(resource)
        else:
            grouped.setdefault(name, []).append(resource)
    return [
        Member(name, [*common, *own], {**shared, **services.get(name, {})})
        for name, own in grouped.items()
        if own
    ]


def per_service(validator: Callable[[StackValidationArgs, ReportViolation], None]) -> Callable:
    """Run a stack validator once per service (`members`). A violation several services report
    alike is reported once, prefixed `service a, b: `; the policy is not applicable only when
    it is for every service. A malformed `services` is one violation (fail closed)."""

    @functools.wraps(validator)
    def wrapper(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        try:
            groups = members(args.resources, args.get_config())
        except ConfigError as exc:
            report_violation(f"policy config {exc}; regenerate it with `dualstack policy-config`")
            return
        if len(groups) == 1 and groups[0].name is None:
            validator(args, report_violation)
            return
        seen: dict[tuple[str, str | None], list[str]] = {}
        skipped: list[_NotApplicableError] = []
        for member in groups:

            def report(message: str, urn: str | None = None, _name: str = str(member.name)) -> None:
                seen.setdefault((message, urn), []).append(_name)

            try:
                validator(StackValidationArgs(member.resources, member.config), report)
            except _NotApplicableError as exc:
                skipped.append(exc)
        for (message, urn), names in seen.items():
            if len(names) == len(groups) > 1:  # a fact of the whole stack (the envelope)
                report_violation(message, urn)
                continue
            label = "service" if len(names) == 1 else "services"
            report_violation(f"{label} {', '.join(names)}: {message}", urn)
        if skipped and len(skipped) == len(groups) and not seen:
            raise skipped[0]

    return wrapper
