"""Pod hardening as rendered: ServiceAccounts without tokens, high UIDs, read-only roots with
writable scratch emptyDirs (CANN's caches included), the pull policy by pin, and the settings'
one-line errors."""

from __future__ import annotations

import pytest

from components.security import pull_policy
from components.settings import SettingsError, load_settings
from tests.conftest import cfg, find

DIGEST = "sha256:" + "cd" * 32
PRECISION_ACCOUNT = "inference-service-precision-check"


def pod(objects, kind, name):
    obj = find(objects, kind, name)
    return obj["spec"]["template"]["spec"]


def job_pod(objects):
    [job] = [o for o in objects if o["kind"] == "Job"]
    return job["spec"]["template"]["spec"]


@pytest.fixture
def objects(render_objects):
    return render_objects(cfg(ascendWeight="5"))


def test_every_pod_has_its_own_account_and_no_token(objects):
    accounts = {
        o["metadata"]["name"]: o["automountServiceAccountToken"]
        for o in objects
        if o["kind"] == "ServiceAccount"
    }
    assert accounts == {
        "inference-blue": False,
        "inference-green": False,
        PRECISION_ACCOUNT: False,
    }
    for name in ("inference-blue", "inference-green"):
        spec = pod(objects, "Deployment", name)
        assert (spec["serviceAccountName"], spec["automountServiceAccountToken"]) == (name, False)
    job = job_pod(objects)
    assert (job["serviceAccountName"], job["automountServiceAccountToken"]) == (
        PRECISION_ACCOUNT,
        False,
    )


def test_pods_run_as_high_ids_with_a_read_only_root(objects):
    blue = pod(objects, "Deployment", "inference-blue")
    green = pod(objects, "Deployment", "inference-green")
    assert blue["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 10001,
        "runAsGroup": 10001,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # HwHiAiUser's GID 1000: the Ascend driver's device files and libraries belong to it.
    assert green["securityContext"]["supplementalGroups"] == [1000]
    assert job_pod(objects)["securityContext"]["runAsUser"] == 65534
    for spec in (blue, green, job_pod(objects)):
        [container] = spec["containers"]
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
        }


def writable_dirs(spec) -> dict[str, str]:
    """mountPath -> volume name, for the container's mounts of emptyDir volumes."""
    empty = {v["name"] for v in spec.get("volumes", []) if "emptyDir" in v}
    [container] = spec["containers"]
    return {m["mountPath"]: m["name"] for m in container["volumeMounts"] if m["name"] in empty}


def test_cann_caches_and_logs_go_to_emptydirs(objects):
    green = pod(objects, "Deployment", "inference-green")
    env = {e["name"]: e["value"] for e in green["containers"][0]["env"]}
    assert env == {
        "TMPDIR": "/tmp",
        "XDG_CACHE_HOME": "/var/cache/inference",
        "ASCEND_CACHE_PATH": "/var/cache/ascend",  # kernel_cache/, aoe_data/
        "ASCEND_WORK_PATH": "/var/lib/ascend",  # log/, atrace/, kernel_meta/, profiling_data/
    }
    assert writable_dirs(green) == {
        "/tmp": "tmp",
        "/var/cache/inference": "model-cache",
        "/var/cache/ascend": "ascend-cache",
        "/var/lib/ascend": "ascend-work",
    }
    assert {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}} in green["volumes"]
    blue = pod(objects, "Deployment", "inference-blue")
    assert writable_dirs(blue) == {"/tmp": "tmp", "/var/cache/inference": "model-cache"}


def test_scratch_volumes_are_configurable(render_objects):
    scratch = [
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "models", "mountPath": "/models", "sizeLimit": "200Gi", "env": ["HF_HOME"]},
    ]
    objects = render_objects(cfg(ascendWeight="5", nvidia={"scratch": scratch}))
    blue = pod(objects, "Deployment", "inference-blue")
    assert writable_dirs(blue) == {"/tmp": "tmp", "/models": "models"}
    assert blue["containers"][0]["env"] == [{"name": "HF_HOME", "value": "/models"}]
    assert {"name": "models", "emptyDir": {"sizeLimit": "200Gi"}} in blue["volumes"]


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("registry/inference-service:v1.2.3-npu", "Always"),
        (f"registry/inference-service:v1.2.3-npu@{DIGEST}", "IfNotPresent"),
        (f"registry/inference-service@{DIGEST}", "IfNotPresent"),
    ],
)
def test_pull_policy_follows_the_pin(image, policy):
    assert pull_policy(image) == policy


def test_rendered_pull_policies(render_objects):
    by_digest = f"registry/inference-service:v1.2.3-npu@{DIGEST}"
    objects = render_objects(cfg(ascendWeight="5", ascend={"image": by_digest}))
    green = pod(objects, "Deployment", "inference-green")["containers"][0]
    blue = pod(objects, "Deployment", "inference-blue")["containers"][0]
    assert (green["image"], green["imagePullPolicy"]) == (by_digest, "IfNotPresent")
    assert blue["imagePullPolicy"] == "Always"
    assert job_pod(objects)["containers"][0]["imagePullPolicy"] == "Always"


def test_ids_are_configurable_but_not_below_10000(render_objects):
    objects = render_objects(cfg(ascendWeight="5", security={"runAsUser": 20000}))
    assert pod(objects, "Deployment", "inference-blue")["securityContext"]["runAsUser"] == 20000
    with pytest.raises(SettingsError) as caught:
        load_settings(cfg(ascendWeight="5", security={"runAsUser": 1000}))
    assert str(caught.value) == (
        "dualstack-inference:security.runAsUser = 1000: "
        "Input should be greater than or equal to 10000"
    )


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            {"ascend": {"scratch": [{"name": "a", "mountPath": "/usr/local/Ascend/driver"}]}},
            "dualstack-inference:ascend: scratch: mount paths must be unique (the driver mount "
            "counts), repeated: /usr/local/Ascend/driver",
        ),
        (
            {"nvidia": {"scratch": [{"name": "root", "mountPath": "/"}]}},
            "dualstack-inference:nvidia.scratch.0.mountPath = '/': must be an absolute path "
            "below /, e.g. /var/cache/model",
        ),
        (
            {
                "nvidia": {
                    "scratch": [
                        {"name": "a", "mountPath": "/a", "env": ["X"]},
                        {"name": "b", "mountPath": "/b", "env": ["X"]},
                    ]
                }
            },
            "dualstack-inference:nvidia: scratch: env X is set by two volumes",
        ),
        (
            {
                "security": {
                    "networkPolicy": {
                        "egress": [
                            {"cidr": "10.0.0.0/8", "namespaces": ["x"], "ports": [{"port": 443}]}
                        ]
                    }
                }
            },
            "dualstack-inference:security.networkPolicy.egress.0: give either namespaces",
        ),
        (
            {
                "security": {
                    "networkPolicy": {"egress": [{"cidr": "10.0.0.0/33", "ports": [{"port": 443}]}]}
                }
            },
            "dualstack-inference:security.networkPolicy.egress.0.cidr = '10.0.0.0/33': "
            "'10.0.0.0/33' is not a CIDR block, e.g. 10.20.0.0/16",
        ),
        (
            {"security": {"networkPolicy": {"egress": [{"cidr": "10.0.0.0/8"}]}}},
            "dualstack-inference:security.networkPolicy.egress.0.ports: missing",
        ),
        (
            {"security": {"networkPolicy": {"clients": [{"namespaces": ["*", "shop"]}]}}},
            "dualstack-inference:security.networkPolicy.clients.0.namespaces = ['*', 'shop']: "
            '"*" (every namespace) stands alone; drop the other names',
        ),
    ],
)
def test_bad_security_settings_name_the_key(override, message):
    with pytest.raises(SettingsError) as caught:
        load_settings(cfg(ascendWeight="5", **override))
    assert str(caught.value).startswith(message)
