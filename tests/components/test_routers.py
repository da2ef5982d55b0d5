"""Both routers as a user renders them: the HTTPRoute of `router: gateway-api`, the shadow
rung (`mirrorPercent`), tester pins, and a cut-over that changes no request's destination.

Every stack file here is a fixture written by the test (never the committed Pulumi.*.yaml).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft7Validator

from components.settings import PROJECT, SettingsError, load_settings
from dualstack.offline.schemas import SchemaError, object_errors, validate_objects
from tests.conftest import REPO, SHARED, cfg, find

IMAGE = "registry/inference-service:v1.2.3-npu"
PROD = {"ascendWeight": "5", "verifiedAscendImage": IMAGE}  # the article's rung
SCHEMA = REPO / "dualstack/offline/crd_schemas/gateway.networking.k8s.io/httproute_v1.json"
SHARED_SCHEMA = SHARED / "schemas/gateway.networking.k8s.io/httproute_v1.json"
DIRECT = {"nvidia": "inference-service-nvidia", "ascend": "inference-service-ascend"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with a fixture `prod` stack at 5% (as the article's prod)."""
    (tmp_path / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    config = {f"{PROJECT}:{key}": value for key, value in PROD.items()}
    (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def dualstack(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "dualstack", "-C", str(project), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def render_cli(project: Path, *sets: str) -> list[dict]:
    argv = ["render", "--stack", "prod"]
    for item in sets:
        argv += ["--set", item]
    done = dualstack(project, *argv)
    assert done.returncode == 0, done.stderr
    return list(yaml.safe_load_all(done.stdout))


def kinds(objects: list[dict]) -> set[str]:
    return {obj["kind"] for obj in objects}


def rule(route: dict, name: str) -> dict:
    [found] = [r for r in route["spec"]["rules"] if r["name"] == name]
    return found


def test_render_prod_with_gateway_api_prints_an_httproute_at_95_5(project):
    objects = render_cli(project, "router=gateway-api")
    assert "VirtualService" not in kinds(objects)
    assert "DestinationRule" not in kinds(objects)
    route = find(objects, "HTTPRoute", "inference-route")
    assert route["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert route["metadata"]["namespace"] == "inference"
    split = route["spec"]["rules"][-1]
    assert split["name"] == "nvidia-ascend-split"
    assert [(b["name"], b["port"], b["weight"]) for b in split["backendRefs"]] == [
        ("inference-service-nvidia", 8000, 95),
        ("inference-service-ascend", 8000, 5),
    ]
    # GAMMA: attached to the shared Service, so mesh clients calling it are split.
    assert route["spec"]["parentRefs"] == [
        {"group": "", "kind": "Service", "name": "inference-service"}
    ]
    # The direct Services it routes to are rendered next to it.
    services = {o["metadata"]["name"] for o in objects if o["kind"] == "Service"}
    assert set(DIRECT.values()) <= services


def test_the_rendered_httproute_passes_the_vendored_schema(project):
    route = find(render_cli(project, "router=gateway-api"), "HTTPRoute", "inference-route")
    validator = Draft7Validator(json.loads(SCHEMA.read_text()))
    assert [e.message for e in validator.iter_errors(route)] == []


@pytest.mark.skipif(not SHARED_SCHEMA.is_file(), reason="no ../shared (a user's clone)")
def test_the_vendored_schema_is_the_shared_one_and_its_validator_agrees(project):
    route = find(render_cli(project, "router=gateway-api"), "HTTPRoute", "inference-route")
    assert SCHEMA.read_bytes() == SHARED_SCHEMA.read_bytes()  # vendored byte for byte
    # ... and the shared validator script, strict, accepts the rendered route.
    done = subprocess.run(
        [sys.executable, str(SHARED / "schemas/validate_crd.py"), "--strict", "-"],
        input=yaml.safe_dump(route),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout
    assert done.stdout.strip() == "OK HTTPRoute/inference-route"


@pytest.mark.parametrize("weight", [0, 5, 20, 50, 80, 100])
def test_both_backends_are_always_weighted_and_never_all_zero(render_objects, weight):
    objects = render_objects(cfg(ascendWeight=str(weight), router="gateway-api"))
    split = rule(find(objects, "HTTPRoute", "inference-route"), "nvidia-ascend-split")
    weights = {b["name"]: b["weight"] for b in split["backendRefs"]}
    assert weights == {DIRECT["nvidia"]: 100 - weight, DIRECT["ascend"]: weight}


def test_gateways_and_mesh_are_parents_and_hostnames_apply(render_objects):
    gateway_api = {
        "gateways": [
            {"name": "public", "namespace": "gateways", "sectionName": "https"},
            {"name": "internal"},
        ],
        "hostnames": ["infer.example.com"],
    }
    objects = render_objects(
        cfg(ascendWeight="20", router="gateway-api", gatewayApi=json.dumps(gateway_api))
    )
    spec = find(objects, "HTTPRoute", "inference-route")["spec"]
    assert spec["parentRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": "public",
            "namespace": "gateways",
            "sectionName": "https",
        },
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "internal"},
        {"group": "", "kind": "Service", "name": "inference-service"},
    ]
    assert spec["hostnames"] == ["infer.example.com"]
    only_gateway = {"mesh": False, "gateways": [{"name": "public"}]}
    objects = render_objects(
        cfg(ascendWeight="20", router="gateway-api", gatewayApi=json.dumps(only_gateway))
    )
    parents = find(objects, "HTTPRoute", "inference-route")["spec"]["parentRefs"]
    assert [p["kind"] for p in parents] == ["Gateway"]


def test_mirror_at_weight_0_renders_for_both_routers(project):
    istio = render_cli(project, "ascendWeight=0", "mirrorPercent=10")
    split = find(istio, "VirtualService", "inference-vs")["spec"]["http"][-1]
    assert split["mirror"] == {
        "host": "inference-service.inference.svc.cluster.local",
        "subset": "ascend",
        "port": {"number": 8000},
    }
    assert split["mirrorPercentage"] == {"value": 10}
    assert [r["weight"] for r in split["route"]] == [100, 0]

    gateway = render_cli(project, "router=gateway-api", "ascendWeight=0", "mirrorPercent=10")
    split = rule(find(gateway, "HTTPRoute", "inference-route"), "nvidia-ascend-split")
    assert split["filters"] == [
        {
            "type": "RequestMirror",
            "requestMirror": {
                "backendRef": {
                    "group": "",
                    "kind": "Service",
                    "name": "inference-service-ascend",
                    "port": 8000,
                },
                "percent": 10,
            },
        }
    ]
    assert [b["weight"] for b in split["backendRefs"]] == [100, 0]


@pytest.mark.parametrize("router", ["istio", "gateway-api"])
def test_mirror_above_weight_0_is_refused_in_one_line(project, router):
    done = dualstack(
        project,
        "render",
        "--stack",
        "prod",
        "--set",
        f"router={router}",
        "--set",
        "mirrorPercent=10",
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: dualstack-inference:mirrorPercent = '10': mirroring is allowed only at "
        "ascendWeight 0 (the shadow rung), not at 5; set mirrorPercent to 0"
    ]


def test_no_mirror_no_filter(render_objects):
    objects = render_objects(cfg(ascendWeight="0", router="gateway-api"))
    assert "filters" not in rule(
        find(objects, "HTTPRoute", "inference-route"), "nvidia-ascend-split"
    )
    vs = find(render_objects(cfg(ascendWeight="0")), "VirtualService", "inference-vs")
    assert "mirror" not in vs["spec"]["http"][-1]


def test_mirror_sizes_ascend_for_the_mirrored_load(render_objects):
    """Ascend handles the mirrored share: 50% of 4 NVIDIA pods' traffic x headroom 1.2 -> 3."""
    objects = render_objects(cfg(ascendWeight="0", mirrorPercent="50"))
    assert find(objects, "Deployment", "inference-green")["spec"]["replicas"] == 3
    assert find(objects, "Deployment", "inference-blue")["spec"]["replicas"] == 4


def test_tester_pins_come_first_in_both_routers(render_objects):
    vs = find(render_objects(cfg(ascendWeight="20")), "VirtualService", "inference-vs")
    http = vs["spec"]["http"]
    assert [r["name"] for r in http] == ["pin-nvidia", "pin-ascend", "nvidia-ascend-split"]
    assert http[1]["match"] == [{"headers": {"x-dualstack-hardware": {"exact": "ascend"}}}]
    assert http[1]["route"] == [
        {
            "destination": {
                "host": "inference-service.inference.svc.cluster.local",
                "subset": "ascend",
                "port": {"number": 8000},
            }
        }
    ]
    objects = render_objects(cfg(ascendWeight="20", router="gateway-api"))
    rules = find(objects, "HTTPRoute", "inference-route")["spec"]["rules"]
    assert [r["name"] for r in rules] == ["pin-nvidia", "pin-ascend", "nvidia-ascend-split"]
    assert rules[0]["matches"] == [
        {"headers": [{"type": "Exact", "name": "x-dualstack-hardware", "value": "nvidia"}]}
    ]
    assert [b["name"] for b in rules[0]["backendRefs"]] == ["inference-service-nvidia"]
    assert "weight" not in rules[0]["backendRefs"][0]  # one backend: all of the rule's traffic


def test_tester_pins_are_configurable_and_can_be_switched_off(render_objects):
    pinning = {"header": "x-dualstack-team-pin", "ascend": "npu", "nvidia": "gpu"}
    objects = render_objects(
        cfg(ascendWeight="5", router="gateway-api", testerPinning=json.dumps(pinning))
    )
    rules = find(objects, "HTTPRoute", "inference-route")["spec"]["rules"]
    assert rules[1]["matches"][0]["headers"] == [
        {"type": "Exact", "name": "x-dualstack-team-pin", "value": "npu"}
    ]
    off = json.dumps({"enabled": False})
    vs = find(
        render_objects(cfg(ascendWeight="5", testerPinning=off)), "VirtualService", "inference-vs"
    )
    assert [r["name"] for r in vs["spec"]["http"]] == ["nvidia-ascend-split"]
    objects = render_objects(cfg(ascendWeight="5", router="gateway-api", testerPinning=off))
    assert [r["name"] for r in find(objects, "HTTPRoute", "inference-route")["spec"]["rules"]] == [
        "nvidia-ascend-split"
    ]


def _destinations_istio(objects: list[dict]) -> dict[str, object]:
    """{rule name: (labels of the pods each destination reaches, weight)} of the VirtualService."""
    subsets = {
        s["name"]: s["labels"]
        for s in find(objects, "DestinationRule", "inference-dr")["spec"]["subsets"]
    }
    found = {}
    for http in find(objects, "VirtualService", "inference-vs")["spec"]["http"]:
        found[http["name"]] = [
            (subsets[r["destination"]["subset"]], r.get("weight")) for r in http["route"]
        ]
        if "mirror" in http:
            found["mirror"] = (subsets[http["mirror"]["subset"]], http["mirrorPercentage"]["value"])
    return found


def _destinations_gateway(objects: list[dict]) -> dict[str, object]:
    selectors = {
        o["metadata"]["name"]: o["spec"]["selector"] for o in objects if o["kind"] == "Service"
    }
    found = {}
    for item in find(objects, "HTTPRoute", "inference-route")["spec"]["rules"]:
        found[item["name"]] = [(selectors[b["name"]], b.get("weight")) for b in item["backendRefs"]]
        for f in item.get("filters", []):
            mirror = f["requestMirror"]
            found["mirror"] = (selectors[mirror["backendRef"]["name"]], mirror["percent"])
    return found


@pytest.mark.parametrize(("weight", "mirror"), [(0, 10), (5, 0), (50, 0), (100, 0)])
def test_cut_over_changes_no_destination(render_objects, weight, mirror):
    """Both routers send each rule's requests to the same pods with the same weights: while
    both objects exist during the switch, any request follows the configured split."""
    config = dict(ascendWeight=str(weight), mirrorPercent=str(mirror))
    istio = _destinations_istio(render_objects(cfg(**config)))
    gateway = _destinations_gateway(render_objects(cfg(router="gateway-api", **config)))
    assert istio == gateway
    assert istio["nvidia-ascend-split"] == [
        ({"app": "inference-service", "hardware": "nvidia"}, 100 - weight),
        ({"app": "inference-service", "hardware": "ascend"}, weight),
    ]


def test_classic_gateways_keep_a_gateway_only_virtual_service_during_the_cut_over(render_objects):
    config = cfg(
        ascendWeight="20",
        router="gateway-api",
        istio=json.dumps({"gateways": ["istio-system/public"], "hosts": ["infer.example.com"]}),
    )
    objects = render_objects(config)
    assert {"HTTPRoute", "VirtualService", "DestinationRule"} <= kinds(objects)
    vs = find(objects, "VirtualService", "inference-vs")["spec"]
    assert vs["gateways"] == ["istio-system/public"]  # not `mesh`: sidecars follow the HTTPRoute
    assert [r["weight"] for r in vs["http"][-1]["route"]] == [80, 20]
    validate_objects(objects)


def test_each_router_registers_its_route_object_under_the_traffic_component(run_stack):
    names = {
        router: {(r.type_, r.name) for r in run_stack(cfg(ascendWeight="5", router=router))}
        for router in ("istio", "gateway-api")
    }
    route = ("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "inference-traffic-http-route")
    vs = ("kubernetes:networking.istio.io/v1:VirtualService", "inference-traffic-virtual-service")
    assert route in names["gateway-api"] and vs not in names["gateway-api"]
    assert vs in names["istio"] and route not in names["istio"]


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (
            {"router": "linkerd"},
            "dualstack-inference:router = 'linkerd': Input should be 'istio' or 'gateway-api'",
        ),
        (
            {"gatewayApi": {"mesh": False}},
            "dualstack-inference:gatewayApi: the HTTPRoute needs a parent: set mesh: true (mesh "
            "clients) or list gateways",
        ),
        (
            {"testerPinning": {"nvidia": "x", "ascend": "x"}},
            "dualstack-inference:testerPinning: nvidia and ascend pin the same value 'x'",
        ),
        (
            {"bakeTime": "45d"},
            "dualstack-inference:bakeTime = '45d': must be at most 30d (Prometheus must still "
            "hold the whole bake window)",
        ),
        (
            {"bakeTime": "4m59s"},
            "dualstack-inference:bakeTime = '4m59s': must be 0s (no bake) or at least 5m (the "
            "gate reads it in 60s steps)",
        ),
        (
            {"bakeTime": "500ms"},
            "dualstack-inference:bakeTime = '500ms': must be 0s (no bake) or at least 5m (the "
            "gate reads it in 60s steps)",
        ),
        (
            {"mirrorPercent": "101", "ascendWeight": "0"},
            "dualstack-inference:mirrorPercent = '101': Input should be less than or equal to 100",
        ),
    ],
)
def test_bad_routing_settings_are_one_line_naming_the_key(keys, message):
    config = cfg(**{"ascendWeight": "20", **keys})
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    assert str(caught.value) == message


@pytest.mark.parametrize("bake", ["0s", "5m", "300s", "4m60s", "30d"])
def test_bake_time_bounds_are_inclusive(bake):
    assert load_settings(cfg(ascendWeight="20", bakeTime=bake)).bake_time == bake


@pytest.mark.parametrize(
    "header", ["x-stainless-lang", "user-agent", "x-dualstack", "x-team-pin", "dualstack-pin"]
)
def test_a_pin_header_is_a_project_header(header):
    """Issue 28: a pin on a header an SDK sends on its own (`x-stainless-lang`) routes real
    traffic around the split: only the project's `x-dualstack-` headers pin."""
    with pytest.raises(SettingsError) as caught:
        load_settings(cfg(ascendWeight="5", testerPinning={"header": header}))
    assert str(caught.value) == (
        f"dualstack-inference:testerPinning.header = {header!r}: not a project header; a pin "
        "header starts with x-dualstack- (e.g. x-dualstack-hardware), which no client sends on "
        "its own"
    )


def test_the_pack_allows_the_same_pin_headers_as_the_settings():
    """The pack imports nothing of the project: its copy of the prefix is kept equal here."""
    from components.settings.routing import PIN_HEADER_PREFIX
    from policies import pins

    assert pins.PIN_HEADER_PREFIX == PIN_HEADER_PREFIX


def test_the_default_pin_header_and_project_headers_are_valid():
    assert load_settings(cfg(ascendWeight="5")).tester_pinning.header == "x-dualstack-hardware"
    pinning = {"header": "x-dualstack-team-pin"}
    assert load_settings(cfg(ascendWeight="5", testerPinning=pinning)).tester_pinning.header == (
        "x-dualstack-team-pin"
    )


def test_uppercase_pin_header_is_refused():
    with pytest.raises(SettingsError, match=r"testerPinning\.header = 'X-Pin'"):
        load_settings(cfg(ascendWeight="5", testerPinning={"header": "X-Pin"}))


def test_schema_rejects_a_misspelt_or_bad_httproute(render_objects):
    route = find(
        render_objects(cfg(ascendWeight="5", router="gateway-api")), "HTTPRoute", "inference-route"
    )
    assert object_errors(route) == []
    bad = json.loads(json.dumps(route))
    bad["spec"]["rules"][-1]["backendRefs"][1]["weigth"] = 5
    [error] = object_errors(bad)
    assert error.startswith("spec.rules.2.backendRefs.1: Additional properties are not allowed")
    bad = json.loads(json.dumps(route))
    bad["spec"]["rules"][-1]["backendRefs"][0]["weight"] = 2_000_000
    [error] = object_errors(bad)
    assert (
        error == "spec.rules.2.backendRefs.0.weight: 2000000 is greater than the maximum of 1000000"
    )


def test_crd_rules_jsonschema_cannot_check_are_checked(render_objects):
    route = find(
        render_objects(cfg(ascendWeight="0", mirrorPercent="10", router="gateway-api")),
        "HTTPRoute",
        "inference-route",
    )
    bad = json.loads(json.dumps(route))
    bad["spec"]["rules"][0]["name"] = "nvidia-ascend-split"
    del bad["spec"]["rules"][-1]["backendRefs"][0]["port"]
    bad["spec"]["rules"][-1]["filters"][0]["requestMirror"]["fraction"] = {"numerator": 1}
    bad["spec"]["parentRefs"].append({"group": "", "kind": "Service", "name": "inference-service"})
    assert object_errors(bad) == [
        "spec.parentRefs: Service inference-service: sectionName or port must be specified when "
        "parentRefs includes 2 or more references to the same parent",
        "spec.rules: Rule name must be unique within the route",
        "spec.rules.2.backendRefs.0: Must have port for Service reference",
        "spec.rules.2.filters.0.requestMirror: Only one of percent or fraction may be specified "
        "in HTTPRequestMirrorFilter",
    ]
    with pytest.raises(SchemaError, match=r"HTTPRoute/inference-route: spec\.rules: Rule name"):
        validate_objects([bad])
