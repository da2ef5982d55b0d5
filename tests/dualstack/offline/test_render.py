"""The offline render: the article's objects, sorted, typed, schema-valid."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from dualstack.offline.mocks import Registered
from dualstack.offline.render import RenderError, objects_of, render, to_yaml, whole_numbers
from dualstack.offline.schemas import SchemaError, object_errors, validate_objects
from tests.conftest import SHARED, cfg, copy_stack_files, find, fixture_config

ARTICLE_KINDS = {
    "Node": 5,
    "Deployment": 2,
    "Service": 3,
    "DestinationRule": 1,
    "VirtualService": 1,
    "PodDisruptionBudget": 2,
}


@pytest.fixture
def prod_objects() -> list[dict]:
    _settings, objects = render(fixture_config("prod"), "prod")
    return objects


def test_prod_renders_the_articles_objects(prod_objects) -> None:
    kinds: dict[str, int] = {}
    for obj in prod_objects:
        kinds[obj["kind"]] = kinds.get(obj["kind"], 0) + 1
    for kind, count in ARTICLE_KINDS.items():
        assert kinds.get(kind) == count, kind
    routes = find(prod_objects, "VirtualService", "inference-vs")["spec"]["http"][-1]["route"]
    assert [r["weight"] for r in routes] == [95, 5]


def test_order_is_kind_namespace_name(prod_objects) -> None:
    keys = [
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in prod_objects
    ]
    assert keys == sorted(keys)
    assert [o["metadata"]["name"] for o in prod_objects if o["kind"] == "Node"] == [
        "ascend-01",
        "ascend-02",
        "nvidia-01",
        "nvidia-02",
        "nvidia-03",
    ]


def test_numbers_come_back_as_ints(prod_objects) -> None:
    text = to_yaml(prod_objects)
    assert "replicas: 4\n" in text and "4.0" not in text and "weight: 95\n" in text
    assert whole_numbers({"a": [1.0, 2.5, {"b": 3.0}]}) == {"a": [1, 2.5, {"b": 3}]}


def test_node_patches_render_as_nodes_with_only_name_labels_taints(prod_objects) -> None:
    node = find(prod_objects, "Node", "nvidia-01")
    assert node == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "nvidia-01",
            "labels": {
                "accelerator": "nvidia-gpu",
                "gpu-model": "A100-80G",
                "migration-status": "stable",
                "pool": "nvidia",
            },
        },
        "spec": {"taints": [{"effect": "NoSchedule", "key": "pool", "value": "nvidia"}]},
    }


def test_render_is_repeatable_byte_for_byte(tmp_path) -> None:
    """Two renders in separate processes with different string hash seeds are identical, and
    equal to this process's render: nothing depends on set or dict iteration order."""
    copy_stack_files(tmp_path)
    outputs = []
    for seed in ("1", "4242"):
        done = subprocess.run(
            [sys.executable, "-m", "dualstack", "-C", str(tmp_path), "render", "--stack", "prod"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0] == to_yaml(render(fixture_config("prod"), "prod")[1])


def test_every_object_passes_its_schema(prod_objects) -> None:
    validate_objects(prod_objects)  # raises on any error
    assert all(object_errors(o) == [] for o in prod_objects)


def test_schema_errors_are_caught(prod_objects) -> None:
    deployment = find(prod_objects, "Deployment", "inference-blue")
    deployment["spec"]["replicass"] = 3
    vs = find(prod_objects, "VirtualService", "inference-vs")
    vs["spec"]["http"][0]["route"][0]["weigth"] = 95
    with pytest.raises(SchemaError) as caught:
        validate_objects(prod_objects)
    lines = str(caught.value).splitlines()
    assert any(
        line.startswith("Deployment/inference-blue: spec: ") and "replicass" in line
        for line in lines
    )
    assert any(
        line.startswith("VirtualService/inference-vs: spec.http.0.route.0: ") and "weigth" in line
        for line in lines
    )


@pytest.mark.skipif(not (SHARED / "schemas" / "validate_crd.py").is_file(), reason="no ../shared")
def test_crds_pass_the_shared_validator_strict(prod_objects, tmp_path) -> None:
    manifest = tmp_path / "render.yaml"
    manifest.write_text(to_yaml(prod_objects))
    done = subprocess.run(
        [sys.executable, str(SHARED / "schemas" / "validate_crd.py"), "--strict", str(manifest)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK VirtualService/inference-vs" in done.stdout
    assert "OK DestinationRule/inference-dr" in done.stdout


def test_mocks_accept_what_the_provider_refuses_so_render_checks() -> None:
    nameless = Registered(
        "kubernetes:batch/v1:Job",
        "job",
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {}},
        True,
    )
    with pytest.raises(RenderError, match=r"has no metadata\.name"):
        objects_of([nameless])
    twin = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "namespace": "n"}}
    with pytest.raises(RenderError, match=r"two objects are both Service n/a"):
        objects_of(
            [
                Registered("kubernetes:core/v1:Service", "x", twin, True),
                Registered("kubernetes:core/v1:Service", "y", twin, True),
            ]
        )


def test_yaml_round_trips(prod_objects) -> None:
    assert list(yaml.safe_load_all(to_yaml(prod_objects))) == prod_objects


def test_string_weight_like_pulumi_config_set(render_objects) -> None:
    objects = render_objects(cfg(ascendWeight="20"))
    routes = find(objects, "VirtualService", "inference-vs")["spec"]["http"][-1]["route"]
    assert [r["weight"] for r in routes] == [80, 20]


def test_memoised_schemas_still_judge_each_object(prod_objects) -> None:
    import copy

    service = find(prod_objects, "Service", "inference-service")
    assert object_errors(service) == []
    broken = copy.deepcopy(service)
    broken["spec"]["portz"] = []
    assert object_errors(broken) and "portz" in object_errors(broken)[0]
    assert object_errors(service) == []  # the good one is still good after the bad one
