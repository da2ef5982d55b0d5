"""The routers' objects as the pack reads them back: one reader module per router, as the
program writes them (`components/routers/`), each with the same interface:

- `KIND`: the kind of object it reads (`VirtualService`, `HTTPRoute`);
- `routes(item) -> list[Route]`: every weighted destination of every route of one object
  (`policies.stack_view.Route`; `policies.stack_view.by_route` groups them into routes);
- `pin_value(entry, header) -> str | None`: the header value a route entry pins testers to,
  when it has exactly the shape of a tester pin (`policies.pins`).

`StackView.route_objects` holds the objects of both; what they do with traffic (shares,
backends, pins) is read the same way for either (`policies.traffic_share`).
"""

from __future__ import annotations

from types import ModuleType

from policies.routers import gateway_api, istio
from policies.stack_view import Item, Route, StackView

READERS: dict[str, ModuleType] = {istio.KIND: istio, gateway_api.KIND: gateway_api}
"""The reader of each kind of route object."""


def reader(kind: str) -> ModuleType:
    """The reader module of route objects of `kind` (`VirtualService`, `HTTPRoute`); raises
    KeyError for another kind (`StackView.route_objects` holds no other)."""
    return READERS[kind]


def routes_of(item: Item) -> list[Route]:
    """Every weighted destination of every route of one VirtualService or HTTPRoute item."""
    return reader(item.kind).routes(item)


def all_routes(view: StackView) -> list[Route]:
    """Every weighted destination of every VirtualService, then every HTTPRoute, of `view`."""
    return [route for item in view.route_objects for route in routes_of(item)]
