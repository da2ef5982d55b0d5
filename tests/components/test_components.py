"""Each component's resources under Pulumi mocks: what `pulumi up` would send."""

from __future__ import annotations

import pulumi
import pytest

from components.traffic import route_weights
from tests.conftest import cfg, find

LADDER = (0, 5, 20, 50, 80, 100)


def test_components_have_three_part_type_tokens(run_stack) -> None:
    resources = run_stack(cfg(ascendWeight="5"))
    components = {r.type_ for r in resources if not r.custom}
    assert {
        "dualstack:index:DualStackInference",
        "dualstack:index:AcceleratorNodePool",
        "dualstack:index:InferenceWorkload",
        "dualstack:index:TrafficSplit",
    } <= components
    assert all(t.startswith("dualstack:index:") for t in components)
    assert all(t.count(":") == 2 for t in components)


def test_node_patches_label_and_taint_every_node(run_stack) -> None:
    patches = [
        r for r in run_stack(cfg(ascendWeight="5")) if r.type_ == "kubernetes:core/v1:NodePatch"
    ]
    by_node = {p.inputs["metadata"]["name"]: p.inputs for p in patches}
    assert sorted(by_node) == ["ascend-01", "ascend-02", "nvidia-01", "nvidia-02", "nvidia-03"]
    assert by_node["nvidia-02"]["metadata"]["labels"]["gpu-model"] == "A100-80G"
    assert by_node["ascend-01"]["metadata"]["labels"]["npu-model"] == "910B"
    assert by_node["ascend-01"]["spec"]["taints"] == [
        {"key": "pool", "value": "ascend", "effect": "NoSchedule"}
    ]
    assert by_node["nvidia-03"]["spec"]["taints"][0]["value"] == "nvidia"


def test_deployments_are_pinned_to_their_pool(render_objects) -> None:
    objects = render_objects(cfg(ascendWeight="5"))
    for name, pool, resource in [
        ("inference-blue", "nvidia", "nvidia.com/gpu"),
        ("inference-green", "ascend", "huawei.com/Ascend910"),
    ]:
        spec = find(objects, "Deployment", name)["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == {"pool": pool}
        assert spec["tolerations"] == [
            {"effect": "NoSchedule", "key": "pool", "operator": "Equal", "value": pool}
        ]
        container = spec["containers"][0]
        assert container["resources"]["limits"][resource] == "1"
        assert container["resources"]["requests"][resource] == "1"
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}


def test_only_ascend_mounts_the_driver_read_only(render_objects) -> None:
    objects = render_objects(cfg(ascendWeight="5"))
    green = find(objects, "Deployment", "inference-green")["spec"]["template"]["spec"]
    driver = {"mountPath": "/usr/local/Ascend/driver", "name": "accelerator-driver"}
    assert {**driver, "readOnly": True} in green["containers"][0]["volumeMounts"]
    host_paths = [v for v in green["volumes"] if "hostPath" in v]
    assert host_paths == [
        {
            "name": "accelerator-driver",
            "hostPath": {"path": "/usr/local/Ascend/driver", "type": "Directory"},
        }
    ]
    blue = find(objects, "Deployment", "inference-blue")["spec"]["template"]["spec"]
    assert [v for v in blue["volumes"] if "hostPath" in v] == []
    assert all("readOnly" not in m for m in blue["containers"][0]["volumeMounts"])


def test_pod_labels_follow_the_article(render_objects) -> None:
    objects = render_objects(cfg(ascendWeight="5"))
    labels = find(objects, "Deployment", "inference-green")["spec"]["template"]["metadata"][
        "labels"
    ]
    assert labels == {"app": "inference-service", "version": "green", "hardware": "ascend"}


@pytest.mark.parametrize("weight", LADDER)
def test_virtual_service_weights_across_the_ladder(render_objects, weight: int) -> None:
    objects = render_objects(cfg(ascendWeight=str(weight)))
    routes = find(objects, "VirtualService", "inference-vs")["spec"]["http"][-1]["route"]
    weights = {r["destination"]["subset"]: r["weight"] for r in routes}
    assert weights == {"nvidia": 100 - weight, "ascend": weight}
    assert all(type(r["weight"]) is int for r in routes)  # 0 included, never dropped


@pytest.mark.parametrize(
    # Ascend serves from 5%: two pods at least, so a drain leaves one ready (20%: 0.96 -> 2)
    "weight, replicas",
    [(0, (4, 1)), (20, (4, 2)), (50, (4, 3)), (80, (4, 4)), (100, (1, 5))],
)
def test_replicas_follow_the_weight(render_objects, weight: int, replicas: tuple[int, int]) -> None:
    objects = render_objects(cfg(ascendWeight=str(weight)))
    got = (
        find(objects, "Deployment", "inference-blue")["spec"]["replicas"],
        find(objects, "Deployment", "inference-green")["spec"]["replicas"],
    )
    assert got == replicas


def test_subsets_select_each_backends_pods(render_objects) -> None:
    objects = render_objects(cfg(ascendWeight="5"))
    subsets = find(objects, "DestinationRule", "inference-dr")["spec"]["subsets"]
    assert subsets == [
        {"labels": {"app": "inference-service", "hardware": "nvidia"}, "name": "nvidia"},
        {"labels": {"app": "inference-service", "hardware": "ascend"}, "name": "ascend"},
    ]


def test_services_shared_and_direct(render_objects) -> None:
    objects = render_objects(cfg(ascendWeight="5"))
    assert find(objects, "Service", "inference-service")["spec"]["selector"] == {
        "app": "inference-service"
    }
    assert find(objects, "Service", "inference-service-ascend")["spec"]["selector"] == {
        "app": "inference-service",
        "hardware": "ascend",
    }
    assert find(objects, "Service", "inference-service-nvidia")["spec"]["ports"][0]["port"] == 8000


def test_pdbs_allow_one_pod_down(render_objects) -> None:
    objects = render_objects(cfg(ascendWeight="5"))
    for name in ("inference-blue-pdb", "inference-green-pdb"):
        assert find(objects, "PodDisruptionBudget", name)["spec"]["maxUnavailable"] == 1


def test_istio_v1beta1_is_selectable(render_objects) -> None:
    objects = render_objects(
        cfg(ascendWeight="5", istio={"apiVersion": "networking.istio.io/v1beta1"})
    )
    assert (
        find(objects, "VirtualService", "inference-vs")["apiVersion"]
        == "networking.istio.io/v1beta1"
    )
    assert (
        find(objects, "DestinationRule", "inference-dr")["apiVersion"]
        == "networking.istio.io/v1beta1"
    )


def test_bad_config_registers_nothing(run_stack) -> None:
    from dualstack.offline.mocks import RecordingMocks

    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="dualstack-inference", stack="t", preview=True)
    pulumi.runtime.set_all_config(cfg(ascendWeight="150"))
    from components.stack import main

    with pytest.raises(pulumi.RunError, match="ascendWeight = '150'"):
        pulumi.runtime.test(main)()
    assert mocks.resources == []


def test_exports_name_what_a_reviewer_needs(run_stack) -> None:
    from components.settings import load_fleet
    from components.stack import DualStackInference, exports

    captured = {}

    @pulumi.runtime.test
    def build():
        fleet = load_fleet(cfg(ascendWeight="20"))  # a single-service stack: a fleet of one
        values = exports(fleet, DualStackInference("inference", fleet))
        return pulumi.Output.all(
            **{k: pulumi.Output.from_input(v) for k, v in values.items()}
        ).apply(captured.update)

    build()
    assert captured["ascendWeight"] == 20
    assert captured["ladderPosition"] == "2/5"
    assert captured["nextStep"] == 50
    assert captured["virtualService"] == "inference-vs"
    assert captured["routeWeights"] == {"nvidia": 80, "ascend": 20}
    assert captured["directServices"] == {
        "nvidia": "inference-service-nvidia",
        "ascend": "inference-service-ascend",
    }


@pytest.mark.parametrize("bad", [-1, 101, 5.5, True])
def test_route_weights_refuse_non_percentages(bad) -> None:
    with pytest.raises(ValueError):
        route_weights(bad)
