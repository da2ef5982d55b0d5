"""Settings validation: the article's defaults, string weights, and one clear line per bad key."""

from __future__ import annotations

import pytest

from components.settings import Settings, SettingsError, load_settings, parse_image
from tests.conftest import cfg


def test_defaults_reproduce_the_article() -> None:
    s = load_settings(cfg(ascendWeight="5"))
    assert s.namespace == "inference"
    assert s.service.name == "inference-service" and s.service.port == 8000
    assert s.nvidia.pool.nodes == ("nvidia-01", "nvidia-02", "nvidia-03")
    assert s.nvidia.pool.node_labels == {
        "pool": "nvidia",
        "accelerator": "nvidia-gpu",
        "gpu-model": "A100-80G",
        "migration-status": "stable",
    }
    assert s.ascend.pool.nodes == ("ascend-01", "ascend-02")
    assert s.ascend.pool.node_labels == {
        "pool": "ascend",
        "accelerator": "huawei-npu",
        "npu-model": "910B",
        "migration-status": "testing",
    }
    assert s.nvidia.image == "registry/inference-service:v1.2.3-cuda"
    assert s.ascend.image == "registry/inference-service:v1.2.3-npu"
    assert (s.nvidia.deployment_name, s.ascend.deployment_name) == (
        "inference-blue",
        "inference-green",
    )
    assert (s.nvidia.accelerator_resource, s.ascend.accelerator_resource) == (
        "nvidia.com/gpu",
        "huawei.com/Ascend910",
    )
    assert s.ascend.driver_host_path == "/usr/local/Ascend/driver"
    assert s.nvidia.driver_host_path is None
    assert s.ladder == (0, 5, 20, 50, 80, 100)
    assert s.istio.api_version == "networking.istio.io/v1"


@pytest.mark.parametrize("raw, expected", [("20", 20), (20, 20), ("0", 0), ("100", 100)])
def test_weight_accepts_pulumi_config_strings(raw: object, expected: int) -> None:
    assert load_settings(cfg(ascendWeight=raw)).ascend_weight == expected


@pytest.mark.parametrize(
    "config, message",
    [
        (
            cfg(ascendWeight="150"),
            r"^dualstack-inference:ascendWeight = '150': .*less than or equal to 100$",
        ),
        (
            cfg(ascendWeight="-5"),
            r"^dualstack-inference:ascendWeight = '-5': .*greater than or equal to 0$",
        ),
        (
            cfg(ascendWeight="abc"),
            r"^dualstack-inference:ascendWeight = 'abc': expected a whole number",
        ),
        (
            cfg(ascendWeight="20.5"),
            r"^dualstack-inference:ascendWeight = '20.5': expected a whole number",
        ),
        (
            cfg(ascendWeight="33"),
            r"^dualstack-inference:ascendWeight = '33': not a ladder step; "
            r"allowed: 0, 5, 20, 50, 80, 100$",
        ),
        (cfg(ascendWeight="5", colour="blue"), r"^dualstack-inference:colour: unknown key"),
        (
            cfg(ascendWeight="5", nvidia={"imag": "x:v1"}),
            r"^dualstack-inference:nvidia.imag: unknown key",
        ),
        (
            cfg(ascendWeight="5", ascend={"image": "registry/inference-service"}),
            r"^dualstack-inference:ascend.image = 'registry/inference-service': no tag or digest",
        ),
        (
            cfg(ascendWeight="5", ascend={"image": "registry/inference-service:latest"}),
            r"'latest' is not allowed",
        ),
        (
            cfg(ascendWeight="5", ascend={"image": "Not An Image"}),
            r"^dualstack-inference:ascend.image = 'Not An Image': .*not an image reference",
        ),
        (
            cfg(ascendWeight="5", nvidia={"pool": {"name": "nvidia", "nodes": []}}),
            r"^dualstack-inference:nvidia.pool.nodes = \[\]: .*at least 1 item",
        ),
        (
            cfg(ascendWeight="5", ladder=[0, 50, 20, 100]),
            r"^dualstack-inference:ladder = \[0, 50, 20, 100\]: must rise strictly from 0 to 100",
        ),
        (
            cfg(ascendWeight="5", ladder=[5, 100]),
            r"dualstack-inference:ladder = \[5, 100\]: must rise",
        ),
        (
            cfg(ascendWeight="5", capacity={"totalReplicas": 0}),
            r"^dualstack-inference:capacity.totalReplicas = 0: .*greater than or equal to 1",
        ),
        (
            cfg(ascendWeight="5", istio={"apiVersion": "networking.istio.io/v2"}),
            r"^dualstack-inference:istio.apiVersion = 'networking.istio.io/v2'",
        ),
        (
            cfg(ascendWeight="5", ascend={"pool": {"name": "ascend", "nodes": ["nvidia-01"]}}),
            r"nodes in both pools: nvidia-01",
        ),
        (
            {},
            r"^dualstack-inference:ascendWeight: missing; "
            r"set it with `pulumi config set ascendWeight <value>`$",
        ),
    ],
)
def test_bad_input_gives_one_clear_line(config: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=message) as caught:
        load_settings(config)
    assert len(str(caught.value).splitlines()) == 1


def test_structured_keys_arrive_as_json_text_like_pulumi_hands_them() -> None:
    s = load_settings(cfg(ascendWeight="5", capacity='{"totalReplicas": 6}'))
    assert s.capacity.total_replicas == 6
    assert s.capacity.headroom == 1.2  # untouched fields keep their defaults


def test_partial_hardware_override_keeps_that_hardwares_defaults() -> None:
    s = load_settings(
        cfg(ascendWeight="5", ascend={"image": "registry/inference-service:v1.3.0-npu"})
    )
    assert s.ascend.image == "registry/inference-service:v1.3.0-npu"
    assert (
        s.ascend.pool.name == "ascend" and s.ascend.accelerator_resource == "huawei.com/Ascend910"
    )
    assert s.ascend_image_verified is False


def test_other_namespaces_are_ignored() -> None:
    s = load_settings({**cfg(ascendWeight="50"), "kubernetes:context": "prod", "pulumi:tags": "x"})
    assert s.ascend_weight == 50


def test_ladder_position_and_next_step() -> None:
    assert (
        load_settings(cfg(ascendWeight="5")).ladder_position,
        load_settings(cfg(ascendWeight="5")).next_step,
    ) == (1, 20)
    top = load_settings(cfg(ascendWeight="100"))
    assert (top.ladder_position, top.next_step) == (5, None)


def test_settings_are_frozen() -> None:
    s = load_settings(cfg(ascendWeight="5"))
    with pytest.raises(Exception, match="frozen"):
        s.ascend_weight = 80  # type: ignore[misc]
    assert isinstance(s, Settings)


@pytest.mark.parametrize(
    "image, parts",
    [
        (
            "registry/inference-service:v1.2.3-npu",
            ("registry/inference-service", "v1.2.3-npu", None),
        ),
        ("registry:5000/team/svc:v1", ("registry:5000/team/svc", "v1", None)),
        ("svc@sha256:" + "a" * 64, ("svc", None, "sha256:" + "a" * 64)),
    ],
)
def test_parse_image(image: str, parts: tuple) -> None:
    assert parse_image(image) == parts
