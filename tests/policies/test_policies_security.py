"""workload-security-baseline and the advisory accelerator-driver-hostpath."""

from __future__ import annotations

import copy

import pytest

from policies.security import container_problems, host_path_volumes, writable_mounts
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
        (
            lambda c: c.update(runAsNonRoot=False),
            "runAsNonRoot is False; set runAsNonRoot: true",
        ),
        (lambda c: c.update(runAsUser=0), "runAsUser is 0 (root); run as a non-zero user"),
        (
            lambda c: c.pop("allowPrivilegeEscalation"),
            "allowPrivilegeEscalation is None; set it to false",
        ),
        (
            lambda c: c.update(privileged=True),
            "privileged is true; remove it (the device plugin grants the devices)",
        ),
        (
            lambda c: c.update(capabilities={"drop": ["NET_RAW"]}),
            "capabilities are not dropped; set capabilities.drop: [ALL]",
        ),
        (lambda c: c.update(capabilities={"drop": ["all"]}), None),  # case does not matter
    ],
)
def test_container_context_problems(edit, expected):
    nvidia = deployment("nvidia", 4, NVIDIA_IMAGE)
    edit(context(nvidia))
    found = baseline(nvidia)
    if expected is None:
        assert found == []
    else:
        assert found == [f"Deployment inference/inference-blue container 'inference': {expected}"]


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


@pytest.mark.parametrize("paths", ["relative", "/usr/local/Ascend/driver", ["relative"], [None]])
def test_bad_driver_paths_config_fails_closed(paths):
    """A string (not a list), a relative path or a non-string is refused, never read as allowed."""
    assert baseline(deployment("ascend", 1, ASCEND_IMAGE), {"driverHostPaths": paths}) == [
        f"policy config driverHostPaths = {paths!r} must be a list of absolute paths; "
        "regenerate it with `dualstack policy-config`"
    ]


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


@pytest.mark.parametrize(
    ("pod_level", "container_level", "expected"),
    [
        ({"runAsUser": 0}, {}, ["runAsUser is 0 (root); run as a non-zero user"]),
        ({"runAsUser": 0}, {"runAsUser": 1000}, []),  # the container's own value wins
        ({"runAsUser": 1000}, {"runAsUser": 0}, ["runAsUser is 0 (root); run as a non-zero user"]),
        ({}, {}, []),  # no user set: the image's user, which runAsNonRoot already guards
    ],
)
def test_run_as_user_is_read_from_the_container_then_the_pod(pod_level, container_level, expected):
    """The restricted profile's runAsUser rule: a pod-level 0 applies to every container that
    does not set its own user."""
    clean = {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    container = {
        "securityContext": clean | container_level,
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
    }
    assert container_problems(container, pod_level) == expected


@pytest.mark.parametrize("value", [True, "false", None])
def test_allow_privilege_escalation_names_the_value_found(value):
    nvidia = deployment("nvidia", 4, NVIDIA_IMAGE)
    context(nvidia)["allowPrivilegeEscalation"] = value
    assert baseline(nvidia) == [
        "Deployment inference/inference-blue container 'inference': allowPrivilegeEscalation is "
        f"{value!r}; set it to false"
    ]


def test_a_nameless_writer_of_the_driver_mount_is_named_by_a_question_mark():
    ascend = deployment("ascend", 1, ASCEND_IMAGE)
    containers = pod(ascend)["containers"]
    containers[0]["volumeMounts"][0]["readOnly"] = False
    del containers[0]["name"]
    assert writable_mounts(pod(ascend), "driver") == ["?"]


def test_a_host_path_without_a_path_is_the_host_root():
    """`hostPath: {}` (no path) is judged as the widest mount, `/`, never as allowed."""
    ascend = deployment("ascend", 1, ASCEND_IMAGE)
    pod(ascend)["volumes"][0]["hostPath"] = {}
    assert host_path_volumes(pod(ascend)) == {"driver": "/"}
    [message] = baseline(ascend)
    assert message.startswith("Deployment inference/inference-green mounts hostPath / (volume")
