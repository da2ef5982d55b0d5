"""The HTTPRoute CEL rules a rendered route could break, checked offline.

The vendored schema (`crd_schemas/gateway.networking.k8s.io/httproute_v1.json`, Gateway API
v1.6.1) carries these as `x-kubernetes-validations`, which jsonschema ignores; the API server
enforces them, so `pulumi up` would fail where the offline render passed. Messages are the
CRD's own:
- `spec.rules`: "Rule name must be unique within the route";
- every Service backendRef (of a rule, and of a `requestMirror` filter): "Must have port for
  Service reference";
- `requestMirror`: "Only one of percent or fraction may be specified";
- `spec.parentRefs`: "sectionName or port must be specified when parentRefs includes 2 or
  more references to the same parent", and then be unique.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _is_service(ref: Mapping[str, Any]) -> bool:
    return ref.get("group", "") in ("", "core") and ref.get("kind", "Service") == "Service"


def _backend_problems(ref: Mapping[str, Any], where: str) -> list[str]:
    if _is_service(ref) and ref.get("port") is None:
        return [f"{where}: Must have port for Service reference"]
    return []


def _parent_problems(parents: list[Mapping[str, Any]]) -> list[str]:
    seen: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = {}
    for ref in parents:
        key = (
            str(ref.get("group", "gateway.networking.k8s.io")),
            str(ref.get("kind", "Gateway")),
            str(ref.get("namespace", "")),
            str(ref.get("name", "")),
        )
        seen.setdefault(key, []).append(ref)
    problems = []
    for (_, kind, _, name), refs in seen.items():
        if len(refs) < 2:
            continue
        sections = [(r.get("sectionName"), r.get("port")) for r in refs]
        if any(section == (None, None) for section in sections):
            problems.append(
                f"spec.parentRefs: {kind} {name}: sectionName or port must be specified when "
                "parentRefs includes 2 or more references to the same parent"
            )
        elif len(set(sections)) < len(sections):
            problems.append(
                f"spec.parentRefs: {kind} {name}: sectionName or port must be unique when "
                "parentRefs includes 2 or more references to the same parent"
            )
    return problems


def http_route_problems(obj: Mapping[str, Any]) -> list[str]:
    """The CEL-rule violations of one HTTPRoute object as `path: message` strings."""
    spec = obj.get("spec") or {}
    rules = list(spec.get("rules") or [])
    problems = _parent_problems(list(spec.get("parentRefs") or []))
    names = [rule.get("name") for rule in rules if rule.get("name")]
    if len(set(names)) < len(names):
        problems.append("spec.rules: Rule name must be unique within the route")
    for i, rule in enumerate(rules):
        for j, ref in enumerate(rule.get("backendRefs") or []):
            problems += _backend_problems(ref, f"spec.rules.{i}.backendRefs.{j}")
        for j, item in enumerate(rule.get("filters") or []):
            mirror = item.get("requestMirror")
            if not isinstance(mirror, Mapping):
                continue
            where = f"spec.rules.{i}.filters.{j}.requestMirror"
            problems += _backend_problems(mirror.get("backendRef") or {}, f"{where}.backendRef")
            if "percent" in mirror and "fraction" in mirror:
                problems.append(
                    f"{where}: Only one of percent or fraction may be specified in "
                    "HTTPRequestMirrorFilter"
                )
    return problems
