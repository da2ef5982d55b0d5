"""workload-security-baseline and the advisory accelerator-driver-hostpath."""

from __future__ import annotations

import copy

import pytest

from tests.support.policy_objects import (
    ASCEND_IMAGE,
    NVIDIA_IMAGE,
    deployment,
    good_stack,
    resource_violations,
)


def baseline(obj, config=None):
    return resource_violations("workload-security-baseline", [obj], config)


def advisory(obj, config=None):
    return resource_violations("accelerator-driver-hostpath", [obj], config)


def pod(obj):
    return obj["spec"]["template"]["spec"]


def context(obj):
    return pod(obj)["containers"][0]["securityContext"]


def test_clean_stack_passes():
    assert resource_violations("workload-security-baseline", good_stack(20)) == []


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c: c.pop("runAsNonRoot"), None),  # pod-level runAsNonRoot still applies
        (lambda c: c.update(runAsNonRoot=False), "runAsNonRoot is False"),
        (lambda c: c.update(runAsUser=0), "runAsUser is 0"),
        (lambda c: c.pop("allowPrivilegeEscalation"), "allowPrivilegeEscalation is None"),
        (lambda c: c.update(privileged=True), "privileged is true"),
        (lambda c: c.update(capabilities={"drop": ["NET_RAW"]}), "capabilities.drop: [ALL]"),
    ],
)
def test_container_context_problems(edit, expected):
    nvidia = deployment("nvidia", 4, NVIDIA_IMAGE)
    edit(context(nvidia))
    found = baseline(nvidia)
    if expected is None:
        assert found == []
    else:
        [message] = found
        assert "Deployment inference/inference-blue container 'inference'" in message
        assert expected in message


def test_missing_limits_fail():
    nvidia = deployment("nvidia", 4, NVIDIA_IMAGE)
    del pod(nvidia)["containers"][0]["resources"]["limits"]["memory"]
    [message] = baseline(nvidia)
    assert "no memory limit" in message


def test_init_containers_are_checked():
    nvidia = deployment("nvidia", 4, NVIDIA_IMAGE)
    pod(nvidia)["initContainers"] = [{"name": "fetch-model", "image": "busybox:1.36"}]
    [message] = baseline(nvidia)
    assert "container 'fetch-model'" in message
    assert "allowPrivilegeEscalation is None" in message and "no cpu or memory limit" in message
    assert "runAsNonRoot" not in message  # inherited from the pod's securityContext


@pytest.mark.parametrize("field", ["hostNetwork", "hostPID", "hostIPC"])
def test_each_host_namespace_fails(field):
    nvidia = deployment("nvidia", 4, NVIDIA_IMAGE)
    pod(nvidia)[field] = True
    assert baseline(nvidia) == [
        f"Deployment inference/inference-blue sets {field}: true; remove it"
    ]
    pod(nvidia)[field] = False
    assert baseline(nvidia) == []


def test_every_problem_of_a_container_is_in_one_message():
    """A container without a name is named '?'; its problems are joined by '; '."""
    nvidia = deployment("nvidia", 4, NVIDIA_IMAGE)
    pod(nvidia)["initContainers"] = [{"image": "busybox:1.36"}]
    assert baseline(nvidia) == [
        "Deployment inference/inference-blue container '?': allowPrivilegeEscalation is None; "
        "set it to false; capabilities are not dropped; set capabilities.drop: [ALL]; no cpu "
        "or memory limit; set resources.limits"
    ]


def test_other_host_path_fails():
    ascend = deployment("ascend", 1, ASCEND_IMAGE)
    pod(ascend)["volumes"][0]["hostPath"]["path"] = "/var/run/docker.sock"
    [message] = baseline(ascend)
    assert "mounts hostPath /var/run/docker.sock" in message
    assert "/usr/local/Ascend/driver" in message
    assert advisory(ascend) == []


def test_writable_driver_mount_fails_and_is_no_advisory():
    ascend = deployment("ascend", 1, ASCEND_IMAGE)
    pod(ascend)["containers"][0]["volumeMounts"][0]["readOnly"] = False
    [message] = baseline(ascend)
    assert "writable in inference" in message and "readOnly: true" in message
    assert advisory(ascend) == []


def test_host_path_messages_name_the_allowed_paths_and_every_writer():
    ascend = deployment("ascend", 1, ASCEND_IMAGE)
    pod(ascend)["volumes"][0]["hostPath"]["path"] = "/var/run/docker.sock"
    where = "Deployment inference/inference-green mounts hostPath /var/run/docker.sock"
    two = {"driverHostPaths": ["/opt/b/driver", "/opt/a/driver"]}
    assert baseline(ascend, two) == [
        f"{where} (volume 'driver'); only the driver paths /opt/a/driver, /opt/b/driver may be "
        "mounted; remove the volume"
    ]
    assert baseline(ascend, {"driverHostPaths": []}) == [
        f"{where} (volume 'driver'); only the driver paths (none) may be mounted; remove the volume"
    ]
    writable = deployment("ascend", 1, ASCEND_IMAGE)
    containers = pod(writable)["containers"]
    containers[0]["volumeMounts"][0]["readOnly"] = False
    containers.append(copy.deepcopy(containers[0]) | {"name": "sidecar"})
    assert baseline(writable) == [
        "Deployment inference/inference-green mounts driver hostPath /usr/local/Ascend/driver "
        "writable in inference, sidecar; set readOnly: true on the mount"
    ]


def test_driver_path_config_override():
    ascend = deployment("ascend", 1, ASCEND_IMAGE)
    config = {"driverHostPaths": ["/opt/npu/driver"]}
    assert len(baseline(ascend, config)) == 1
    pod(ascend)["volumes"][0]["hostPath"]["path"] = "/opt/npu/driver/"
    assert baseline(ascend, config) == []
    assert len(advisory(ascend, config)) == 1


def test_bad_driver_paths_config_fails_closed():
    [message] = baseline(deployment("ascend", 1, ASCEND_IMAGE), {"driverHostPaths": "relative"})
    assert message.startswith("policy config driverHostPaths = ")


def test_missing_properties_are_no_violation():
    bare = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}
    assert baseline(bare) == []
    assert advisory(bare) == []


def test_driver_mount_is_reported_as_advisory_with_its_reason():
    [message] = advisory(deployment("ascend", 1, ASCEND_IMAGE))
    assert message == (
        "Deployment inference/inference-green mounts the host's /usr/local/Ascend/driver "
        "read-only (volume 'driver'): an allowed exception to the no-hostPath baseline, "
        "because the CANN runtime in the image loads the driver installed on the node (the seed "
        "article's setup); keep it read-only and limited to this path"
    )
    assert advisory(deployment("nvidia", 4, NVIDIA_IMAGE)) == []
