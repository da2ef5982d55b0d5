"""Each router's reader reads back what that router's program module writes: the program's
render under `router: istio` and `router: gateway-api` gives the same routes, in the same
order, sending the same shares to the same workloads, with the pins recognised as pins."""

from __future__ import annotations

import pytest

from policies.routers import READERS, routes_of
from policies.stack_view import StackView
from tests.conftest import cfg
from tests.support.policy_objects import PIN_HEADER, ROUTERS, TOKENS, stack_args

ROUTE_KINDS = {"istio": "VirtualService", "gateway-api": "HTTPRoute"}


def view_of(objects) -> StackView:
    return StackView.of(stack_args([o for o in objects if o["kind"] in TOKENS]).resources)


@pytest.mark.parametrize("router", ROUTERS)
@pytest.mark.parametrize("weight", [0, 5, 100])
def test_the_reader_of_each_router_reads_its_rendered_split_and_pins(
    render_objects, router, weight
):
    view = view_of(render_objects(cfg(ascendWeight=str(weight), router=router)))
    [item] = view.route_objects
    assert item.kind == ROUTE_KINDS[router]
    reader = READERS[item.kind]
    by_rule: dict[str, list] = {}
    for route in routes_of(item):
        by_rule.setdefault(route.route_name, []).append(route)
    assert list(by_rule) == ["pin-nvidia", "pin-ascend", "nvidia-ascend-split"]
    split = {
        workload.label: route.weight
        for route in by_rule["nvidia-ascend-split"]
        for workload in view.reach(route).workloads
    }
    assert split == {
        "Deployment inference/inference-blue": 100 - weight,
        "Deployment inference/inference-green": weight,
    }
    pins = {name: reader.pin_value(routes[0].entry, PIN_HEADER) for name, routes in by_rule.items()}
    assert pins == {"pin-nvidia": "nvidia", "pin-ascend": "ascend", "nvidia-ascend-split": None}
