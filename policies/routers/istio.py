"""The Istio router's objects read back: every weighted destination of a VirtualService, and
the shape of a tester pin among its `http` routes.

Istio facts (istio.io traffic-management reference, VirtualService): a VirtualService's routes
are its `http`, `tcp` and `tls` lists, each entry's `route` listing weighted destinations
(`destination.host`, `destination.subset`, `weight`); a route with one destination takes all
traffic whatever its weight, and an omitted weight beside other destinations counts as 0; a
short host name means `<host>.<VirtualService namespace>.svc.cluster.local`. Header match keys
are lowercase.

Same interface as `policies.routers.gateway_api`: `KIND`, `routes(item)`,
`pin_value(entry, header)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.common import as_int, mapping, one, path, sequence
from policies.stack_view import Item, Route, fqdn

KIND = "VirtualService"
ROUTE_SECTIONS = ("http", "tcp", "tls")
"""The route lists of a VirtualService spec; each entry's `route` lists weighted destinations."""

_RULE_KEYS = frozenset({"name", "match", "route"})
_DESTINATION_KEYS = frozenset({"destination", "weight"})


def routes(item: Item) -> list[Route]:
    """Every weighted destination of every route (http, tcp, tls; any match) of a
    VirtualService item, in spec order; `weight` is in % (100 for a lone destination without
    one, None beside others: we demand an explicit integer)."""
    found = []
    for section in ROUTE_SECTIONS:
        for index, entry in enumerate(sequence(path(item.props, "spec", section))):
            entry = mapping(entry)
            destinations = [mapping(r) for r in sequence(entry.get("route"))]
            key = f"{section}[{index}]"
            name = str(entry.get("name") or key)
            for dest in destinations:
                raw = dest.get("weight")
                # No weight: all traffic when alone; beside others we demand an explicit integer.
                alone = 100 if len(destinations) == 1 else None
                weight = alone if raw is None else as_int(raw)
                host = path(dest, "destination", "host")
                subset = path(dest, "destination", "subset")
                found.append(
                    Route(
                        route_object=item,
                        route_name=name,
                        route_key=key,
                        host=fqdn(str(host or ""), item.namespace),
                        subset=str(subset) if subset else None,
                        weight=weight,
                        raw_weight=raw,
                        entry=entry if section == "http" else {},
                    )
                )
    return found


def pin_value(entry: Mapping[str, Any], header: str) -> str | None:
    """The pinned value of a VirtualService `http` entry (`match: [{headers: {<header>:
    {exact: <value>}}}]`, one destination of weight 100 or none, nothing else), or None when
    it is not a pin rule (`policies.pins`)."""
    if set(entry) - _RULE_KEYS:
        return None
    match = one(entry.get("match"))
    destinations = sequence(entry.get("route"))
    if match is None or set(match) != {"headers"} or len(destinations) != 1:
        return None
    destination = mapping(destinations[0])
    if set(destination) - _DESTINATION_KEYS:
        return None
    weight = destination.get("weight")
    if weight is not None and as_int(weight) != 100:
        return None
    headers = mapping(match.get("headers"))
    condition = mapping(headers.get(header))
    if set(headers) != {header} or set(condition) != {"exact"}:
        return None
    value = condition.get("exact")
    return value if isinstance(value, str) else None
