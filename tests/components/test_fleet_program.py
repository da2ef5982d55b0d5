"""The program over a fleet: the pools once, one set of components per service."""

from __future__ import annotations

import pulumi

from components.settings import load_fleet
from tests.conftest import PROJECT, cfg, find, fleet_config


def test_the_pools_are_patched_once_for_every_service(run_stack) -> None:
    resources = run_stack(fleet_config())
    nodes = [r.inputs["metadata"]["name"] for r in resources if r.type_.endswith("NodePatch")]
    assert sorted(nodes) == ["ascend-01", "ascend-02", "nvidia-01", "nvidia-02", "nvidia-03"]
    pools = [r.name for r in resources if r.type_ == "dualstack:index:AcceleratorNodePool"]
    assert sorted(pools) == ["inference-ascend-pool", "inference-nvidia-pool"]


def test_each_service_has_its_own_named_components(run_stack) -> None:
    names = {r.name for r in run_stack(fleet_config())}
    for service in ("chat", "embedder", "reranker"):
        assert {
            f"inference-{service}-nvidia-deployment",
            f"inference-{service}-ascend-deployment",
            f"inference-{service}-traffic-virtual-service",
            f"inference-{service}-monitoring-rules",
            f"inference-{service}-precision-job",
        } <= names
    assert "inference-traffic-virtual-service" not in names


def test_each_service_splits_at_its_own_weight_over_its_own_pods(render_objects) -> None:
    objects = render_objects(fleet_config())
    for service, weight in (("chat", 50), ("embedder", 20), ("reranker", 0)):
        vs = find(objects, "VirtualService", f"{service}-vs")
        (split,) = [entry for entry in vs["spec"]["http"] if entry["name"] == "nvidia-ascend-split"]
        route = split["route"]
        host = f"{service}.inference-fleet.svc.cluster.local"
        assert [(r["destination"]["host"], r["weight"]) for r in route] == [
            (host, 100 - weight),
            (host, weight),
        ]
        dr = find(objects, "DestinationRule", f"{service}-dr")
        assert dr["spec"]["subsets"][1]["labels"] == {"app": service, "hardware": "ascend"}
        green = find(objects, "Deployment", f"{service}-green")
        assert green["spec"]["template"]["metadata"]["labels"]["app"] == service
    image = find(objects, "Deployment", "embedder-green")["spec"]["template"]["spec"]
    assert image["containers"][0]["image"] == "registry/embedder:v1.4.0-npu"


def test_a_fleets_outputs_are_per_service() -> None:
    from components.stack import DualStackInference, exports

    captured = {}

    @pulumi.runtime.test
    def build():
        fleet = load_fleet(fleet_config())
        values = exports(fleet, DualStackInference("inference", fleet))
        return pulumi.Output.all(
            **{k: pulumi.Output.from_input(v) for k, v in values.items()}
        ).apply(captured.update)

    build()
    assert sorted(captured) == ["namespace", "services"]
    assert captured["services"]["embedder"]["ascendWeight"] == 20
    assert captured["services"]["embedder"]["ladderPosition"] == "2/5"
    assert captured["services"]["chat"]["routeWeights"] == {"nvidia": 50, "ascend": 50}
    assert captured["services"]["reranker"]["deployments"] == {
        "nvidia": "reranker-blue",
        "ascend": "reranker-green",
    }


def test_a_declared_fleet_of_one_uses_member_names(render_objects) -> None:
    objects = render_objects(cfg(services={"chat": {"ascendWeight": 5}}))
    assert find(objects, "VirtualService", "chat-vs")["metadata"]["labels"] == {"app": "chat"}


def test_a_fleet_has_one_dashboard_and_each_service_its_own_labelled_rules(render_objects):
    import json

    objects = render_objects(fleet_config())
    boards = [
        o for o in objects if o["kind"] == "ConfigMap" and "dashboard" in o["metadata"]["name"]
    ]
    assert [b["metadata"]["name"] for b in boards] == ["dualstack-fleet-dashboard-inference-fleet"]
    assert "app" not in boards[0]["metadata"]["labels"]  # every service's, no one service's
    board = json.loads(boards[0]["data"]["dualstack-inference-fleet.json"])
    variable = next(v for v in board["templating"]["list"] if v["name"] == "service")
    assert variable["query"] == "chat,embedder,reranker"
    rules = find(objects, "PrometheusRule", "embedder-dualstack")["spec"]["groups"]
    assert [g["name"] for g in rules] == [
        "dualstack.inference-fleet.embedder.requests",
        "dualstack.inference-fleet.embedder.accelerators",
        "dualstack.inference-fleet.embedder.usage",
        "dualstack.inference-fleet.embedder.alerts",
    ]
    weight = next(r for r in rules[0]["rules"] if r["record"].endswith("ascend_weight:ratio"))
    assert (weight["expr"], weight["labels"]["service"]) == ("vector(0.2)", "embedder")


def test_each_services_precision_job_pushes_its_own_group() -> None:
    from components.precision import check_options
    from components.settings.base import deep_merge

    config = fleet_config()
    pushing = {"precisionCheck": {"pushgatewayUrl": "http://pushgateway.monitoring:9091"}}
    config[f"{PROJECT}:services"]["chat"] = deep_merge(
        config[f"{PROJECT}:services"]["chat"], pushing
    )
    chat = load_fleet(config).member("chat")
    assert check_options(chat).push_labels == ("namespace=inference-fleet", "service=chat")


def test_make_example_renders_and_previews_the_example_fleet(tmp_path) -> None:
    """`.ci/example-fleet` (`make example`, part of `make test`, so of CI's unit-test job)."""
    import json
    import subprocess
    import sys

    from tests.conftest import REPO

    done = subprocess.run(
        ["bash", str(REPO / ".ci" / "example-fleet"), str(tmp_path / "out")],
        env={"PY": sys.executable, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rendered = sorted(p.name for p in (tmp_path / "out" / "render").iterdir())
    assert "virtualservice-inference-fleet-embedder-vs.yaml" in rendered
    assert "configmap-inference-fleet-dualstack-fleet-dashboard-inference-fleet.yaml" in rendered
    (fleet,) = json.loads((tmp_path / "out" / "preview.json").read_text())["stacks"]
    assert (fleet["passed"], fleet["violations"]) == (True, [])
    assert [(s["service"], s["ascendWeight"]) for s in fleet["services"]] == [
        ("chat", 50),
        ("embedder", 20),
        ("reranker", 0),
    ]
    assert (
        "Policies (dualstack-migration, previous weights chat 50%, embedder 20%, reranker 0%)"
        in (done.stdout)
    )
