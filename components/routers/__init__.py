"""The routers: one module per API that splits traffic, each writing and reading back its own
objects (as fluxcd/flagger `pkg/router` keeps `istio.go` and `gateway_api.go`).

Every router module has the same interface:
- `KIND` (the object's kind), `ROLE` (its role under the TrafficSplit, `resource_names`);
- `renders(settings) -> bool`: whether the stack renders its object;
- `type_token(settings)`, `object_name(settings)`: its Pulumi type token and its name;
- `spec(settings, weights) -> dict`: the object's spec, the split by `weights`
  ({nvidia: 100 - w, ascend: w} in %, `components.traffic.route_weights`, the one weight rule);
- `patch(settings, weights) -> list[dict]` / `kubectl_patch(...) -> str`: the JSON patch that
  sets a live object's split to `weights` (the break-glass rollback, `dualstack.step.emergency`).
  Both build it with `components.routers.json_patch` (guarded weights, the kubectl line).

Both render the same rules in the same order: a pin per backend (`testerPinning`), then the
split (`naming.SPLIT_RULE`). The policy pack reads them back with its own readers
(`policies/routers/`).
"""

from __future__ import annotations

from types import ModuleType

from components.routers import gateway_api, istio
from components.settings import Settings

ROUTERS: tuple[ModuleType, ...] = (gateway_api, istio)
"""Every router, in the order the emergency rollback applies their objects: the HTTPRoute,
then the VirtualService (kept during a cut-over for classic Istio gateways)."""


def active(settings: Settings) -> list[ModuleType]:
    """The routers whose objects `settings` renders, in `ROUTERS` order (both during a
    cut-over from Istio to the Gateway API with classic gateways still bound)."""
    return [router for router in ROUTERS if router.renders(settings)]
