"""Each router's patch of its own live object: a `kubectl patch` that moves the split the
program renders (the break-glass rollback, `dualstack.step.emergency`), and nothing else."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from components.routers import active, gateway_api, istio
from components.settings import load_settings
from components.traffic import route_weights
from dualstack.offline.render import render, to_yaml
from tests.conftest import cfg, find

GATEWAY_API = {"router": "gateway-api"}
OBJECTS = {istio: ("VirtualService", "inference-vs"), gateway_api: ("HTTPRoute", "inference-route")}
CONFIGS = {istio: {}, gateway_api: GATEWAY_API}


def test_the_istio_patch_guards_the_subsets_of_the_route_after_the_pins():
    # The split is the third route: after the two tester pins.
    patch = istio.patch(load_settings(cfg(ascendWeight="0")), {"nvidia": 100, "ascend": 0})
    assert patch == [
        {"op": "test", "path": "/spec/http/2/route/0/destination/subset", "value": "nvidia"},
        {"op": "test", "path": "/spec/http/2/route/1/destination/subset", "value": "ascend"},
        {"op": "replace", "path": "/spec/http/2/route/0/weight", "value": 100},
        {"op": "replace", "path": "/spec/http/2/route/1/weight", "value": 0},
    ]
    unpinned = load_settings(cfg(ascendWeight="0", testerPinning={"enabled": False}))
    assert istio.patch(unpinned, route_weights(0))[0]["path"] == (
        "/spec/http/0/route/0/destination/subset"
    )


def test_the_httproute_patch_guards_the_services_of_the_rule_after_the_pins():
    settings = load_settings(cfg(ascendWeight="20", **GATEWAY_API))
    patch = gateway_api.patch(settings, {"nvidia": 80, "ascend": 20})
    assert patch == [
        {
            "op": "test",
            "path": "/spec/rules/2/backendRefs/0/name",
            "value": "inference-service-nvidia",
        },
        {
            "op": "test",
            "path": "/spec/rules/2/backendRefs/1/name",
            "value": "inference-service-ascend",
        },
        {"op": "replace", "path": "/spec/rules/2/backendRefs/0/weight", "value": 80},
        {"op": "replace", "path": "/spec/rules/2/backendRefs/1/weight", "value": 20},
    ]
    unpinned = load_settings(cfg(ascendWeight="5", testerPinning={"enabled": False}, **GATEWAY_API))
    assert gateway_api.patch(unpinned, route_weights(5))[0]["path"] == (
        "/spec/rules/0/backendRefs/0/name"
    )


@pytest.mark.parametrize(
    ("config", "routers"),
    [
        ({}, [istio]),
        (GATEWAY_API, [gateway_api]),
        # the cut-over: classic gateways keep a VirtualService next to the HTTPRoute
        ({"istio": {"gateways": ["istio-system/public"]}, **GATEWAY_API}, [gateway_api, istio]),
    ],
)
def test_active_routers_are_the_ones_whose_objects_render(config, routers):
    settings = load_settings(cfg(ascendWeight="5", **config))
    assert active(settings) == routers
    _, objects = render(cfg(ascendWeight="5", **config), "prod")
    assert {o["kind"] for o in objects} & {"VirtualService", "HTTPRoute"} == {
        router.KIND for router in routers
    }


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.parametrize("router", [istio, gateway_api], ids=["istio", "gateway-api"])
@pytest.mark.parametrize(("before", "after"), [(50, 0), (100, 80), (20, 5)])
def test_kubectl_patch_of_the_deployed_object_gives_the_rendered_one(
    tmp_path, router, before, after
):
    """`kubectl patch --local` (offline) applied to the deployed object gives exactly the
    object the rollback commit renders."""
    kind, name = OBJECTS[router]
    _, objects = render(cfg(ascendWeight=str(before), **CONFIGS[router]), "prod")
    current = tmp_path / "route.yaml"
    current.write_text(to_yaml([find(objects, kind, name)]))
    settings, wanted = render(cfg(ascendWeight=str(after), **CONFIGS[router]), "prod")
    weights = route_weights(settings.ascend_weight)
    command = router.kubectl_patch(settings, weights)
    assert command.startswith(f"kubectl -n inference patch {kind.lower()}s.")
    assert f" {name} --type json -p " in command
    patch = json.dumps(router.patch(settings, weights))
    kubectl = ["kubectl", "patch", "--local", "-f", str(current), "--type", "json"]
    done = subprocess.run(
        [*kubectl, "-p", patch, "-o", "yaml"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert yaml.safe_load(done.stdout) == find(wanted, kind, name)
