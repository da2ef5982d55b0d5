"""The Gateway API router's objects read back: every backendRef of an HTTPRoute, and the
shape of a tester pin among its rules.

Gateway API facts (gateway-api.sigs.k8s.io, HTTPRoute; REFERENCE.md "Gateway API"): an
HTTPRoute rule's `backendRefs` are the destinations, a Service by default (group "", kind
Service), in the route's namespace unless one is given; a backendRef's `weight` is a
proportion (weight / sum of the rule's weights) and defaults to 1; a `RequestMirror` filter
copies requests whose responses are discarded, so it serves no traffic and is no destination.
Header names are compared case-insensitively; a match's path defaults to PathPrefix `/`.

Same interface as `policies.routers.istio`: `KIND`, `routes(item)`, `pin_value(entry, header)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.common import as_int, mapping, one, path, sequence
from policies.stack_view import Item, Route, fqdn

KIND = "HTTPRoute"

_RULE_KEYS = frozenset({"name", "matches", "backendRefs"})
_BACKEND_KEYS = frozenset({"group", "kind", "name", "namespace", "port", "weight"})


def backend_host(ref: Mapping[str, Any], namespace: str) -> str:
    """A backendRef's Service as an FQDN; another kind of backend as `<kind> <name>`, which no
    Service matches (its pods cannot be known)."""
    name = str(ref.get("name") or "")
    group, kind = str(ref.get("group") or ""), str(ref.get("kind") or "Service")
    if group in ("", "core") and kind == "Service":
        return fqdn(name, str(ref.get("namespace") or namespace))
    return f"{group or 'core'}/{kind} {name}"


def routes(item: Item) -> list[Route]:
    """Every backendRef of every rule of an HTTPRoute item, in spec order; `weight` is the
    backendRef's (default 1, a proportion); mirror filters are left out."""
    found = []
    for index, rule in enumerate(sequence(path(item.props, "spec", "rules"))):
        rule = mapping(rule)
        refs = [mapping(r) for r in sequence(rule.get("backendRefs"))]
        key = f"rules[{index}]"
        for ref in refs:
            raw = ref.get("weight")
            found.append(
                Route(
                    route_object=item,
                    route_name=str(rule.get("name") or key),
                    route_key=key,
                    host=backend_host(ref, item.namespace),
                    subset=None,
                    weight=1 if raw is None else as_int(raw),
                    raw_weight=raw,
                    entry=rule,
                )
            )
    return found


def pin_value(rule: Mapping[str, Any], header: str) -> str | None:
    """The pinned value of an HTTPRoute rule (`matches: [{headers: [{name: <header>, value:
    <value>, type: Exact}]}]`, a path of PathPrefix `/` at most, one backendRef of weight > 0
    or none, nothing else), or None when it is not a pin rule (`policies.pins`)."""
    if set(rule) - _RULE_KEYS:
        return None
    match = one(rule.get("matches"))
    refs = sequence(rule.get("backendRefs"))
    if match is None or set(match) - {"headers", "path"} or len(refs) != 1:
        return None
    match_path = match.get("path")
    if match_path is not None and dict(mapping(match_path)) != {"type": "PathPrefix", "value": "/"}:
        return None
    ref = mapping(refs[0])
    if set(ref) - _BACKEND_KEYS:
        return None
    weight = ref.get("weight")
    if weight is not None and not (as_int(weight) or 0) > 0:
        return None  # a lone backend of weight 0 gets nothing
    condition = one(match.get("headers"))
    if condition is None or set(condition) - {"name", "value", "type"}:
        return None
    if condition.get("type", "Exact") != "Exact":
        return None
    name, value = condition.get("name"), condition.get("value")
    if not isinstance(name, str) or name.lower() != header.lower():
        return None
    return value if isinstance(value, str) else None
