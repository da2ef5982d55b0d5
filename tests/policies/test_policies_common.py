"""The prop readers every policy shares (`policies.common`): where each workload kind keeps its
pod spec and pod labels, how messages name a resource, and the ladder config."""

from __future__ import annotations

from typing import Any

import pytest

from policies.common import (
    ConfigError,
    config_ladder,
    describe,
    kind_of,
    pod_labels,
    pod_template_spec,
)
from tests.support.policy_objects import (
    ASCEND_IMAGE,
    NAMESPACE,
    container,
    good_stack,
    resource_violations,
    stack_violations,
)

POD_SPEC = {"containers": [{"name": "inference", "image": ASCEND_IMAGE}]}
POD_LABELS = {"app": "inference-service", "hardware": "ascend"}
OWN_LABELS = {"team": "serving"}
"""Labels of the workload object itself, never those of its pods."""
JOB_LABELS = {"batch": "warmup"}
"""Labels of a CronJob's Job template, never those of its pods."""
TEMPLATE = {"metadata": {"name": "tpl", "labels": POD_LABELS}, "spec": POD_SPEC}
METADATA = {"name": "probe", "namespace": NAMESPACE, "labels": OWN_LABELS}


def pod_props() -> dict[str, Any]:
    """A bare Pod: its own metadata labels and spec are its pod's."""
    metadata = {"name": "probe", "namespace": NAMESPACE, "labels": POD_LABELS}
    return {"metadata": metadata, "spec": POD_SPEC}


def cron_job_props() -> dict[str, Any]:
    """A CronJob: the pod template sits under `spec.jobTemplate.spec.template`."""
    return {
        "metadata": METADATA,
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "metadata": {"labels": JOB_LABELS},
                "spec": {"backoffLimit": 1.0, "template": TEMPLATE},
            },
        },
    }


def templated_props() -> dict[str, Any]:
    """A Deployment, StatefulSet, DaemonSet, ReplicaSet or Job: the template under `spec`."""
    return {"metadata": METADATA, "spec": {"replicas": 2.0, "template": TEMPLATE}}


PROPS = {
    "Pod": pod_props,
    "CronJob": cron_job_props,
    **{
        kind: templated_props
        for kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")
    },
}


@pytest.mark.parametrize("kind", sorted(PROPS))
def test_pod_template_spec_reads_the_pod_spec_of_every_workload_kind(kind: str) -> None:
    assert pod_template_spec(kind, PROPS[kind]()) == {
        "containers": [{"name": "inference", "image": ASCEND_IMAGE}]
    }


@pytest.mark.parametrize("kind", sorted(PROPS))
def test_pod_labels_are_the_labels_of_the_pods_not_of_the_workload(kind: str) -> None:
    assert pod_labels(kind, PROPS[kind]()) == {"app": "inference-service", "hardware": "ascend"}


@pytest.mark.parametrize("kind", ["Service", "ConfigMap", "PodDisruptionBudget", "pod", ""])
def test_pod_template_spec_of_a_kind_without_pods_is_none(kind: str) -> None:
    assert pod_template_spec(kind, templated_props()) is None


@pytest.mark.parametrize(
    ("kind", "props"),
    [
        ("Pod", {}),
        ("Pod", {"spec": "containers"}),
        ("CronJob", {}),
        ("CronJob", {"spec": {"template": TEMPLATE}}),  # a Deployment's shape
        ("CronJob", {"spec": {"jobTemplate": {"template": TEMPLATE}}}),
        ("CronJob", {"spec": {"jobTemplate": {"spec": {"template": "pod"}}}}),
        ("Deployment", {"spec": {"jobTemplate": {"spec": {"template": TEMPLATE}}}}),
        ("Job", {"spec": {"template": ["pod"]}}),
    ],
)
def test_pod_template_spec_of_malformed_props_is_empty(kind: str, props: dict) -> None:
    assert pod_template_spec(kind, props) == {}


@pytest.mark.parametrize(
    ("kind", "props"),
    [
        ("Pod", {}),
        ("Pod", {"metadata": {"name": "probe"}}),
        ("Pod", {"metadata": {"labels": "app"}}),
        ("Pod", {"spec": {"template": TEMPLATE}}),  # a Pod has no template
        ("CronJob", {"metadata": {"labels": POD_LABELS}}),  # the CronJob's own labels
        ("CronJob", {"spec": {"template": TEMPLATE}}),  # a Deployment's shape
        ("CronJob", {"spec": {"jobTemplate": {"template": TEMPLATE}}}),
        ("Deployment", {"metadata": {"labels": POD_LABELS}}),  # the Deployment's own labels
        ("Deployment", {"spec": {"jobTemplate": {"spec": {"template": TEMPLATE}}}}),
    ],
)
def test_pods_without_readable_labels_have_none(kind: str, props: dict) -> None:
    assert pod_labels(kind, props) == {}


@pytest.mark.parametrize(
    ("token", "kind"),
    [
        ("kubernetes:apps/v1:Deployment", "Deployment"),
        ("kubernetes:batch/v1:CronJob", "CronJob"),
        ("kubernetes:core/v1:Pod", "Pod"),
        ("kubernetes:core/v1:NodePatch", "NodePatch"),
        ("kubernetes:networking.istio.io/v1:VirtualService", "VirtualService"),
        ("aws:s3/bucket:Bucket", ""),
        ("pulumi:providers:kubernetes", ""),
        ("kubernetes", ""),
        ("", ""),
    ],
)
def test_kind_of_a_type_token(token: str, kind: str) -> None:
    assert kind_of(token) == kind


@pytest.mark.parametrize(
    ("token", "metadata", "label"),
    [
        (
            "kubernetes:apps/v1:Deployment",
            {"name": "web", "namespace": "prod"},
            "Deployment prod/web",
        ),
        ("kubernetes:core/v1:Pod", {"name": "probe"}, "Pod probe"),
        ("kubernetes:core/v1:Pod", {"namespace": "prod"}, "Pod prod/<unnamed>"),
        ("kubernetes:batch/v1:CronJob", {"name": "", "namespace": ""}, "CronJob <unnamed>"),
        ("kubernetes:batch/v1:CronJob", None, "CronJob <unnamed>"),
        ("aws:s3/bucket:Bucket", {"name": "logs"}, "aws:s3/bucket:Bucket logs"),
    ],
)
def test_describe_names_kind_namespace_and_name(token: str, metadata: Any, label: str) -> None:
    assert describe(token, {"metadata": metadata}) == label


@pytest.mark.parametrize(
    ("ladder", "steps"),
    [
        (None, (0, 5, 20, 50, 80, 100)),
        ([0.0, 100.0], (0, 100)),
        ([0.0, 50.0, 100.0], (0, 50, 100)),
    ],
)
def test_a_ladder_of_two_steps_or_more_from_0_to_100_is_read(ladder: Any, steps: tuple) -> None:
    assert config_ladder({"ladder": ladder}) == steps


@pytest.mark.parametrize("ladder", [[0.0], [100.0], [], [0.0, 0.0]])
def test_a_ladder_without_two_steps_from_0_to_100_is_refused(ladder: list) -> None:
    with pytest.raises(ConfigError) as raised:
        config_ladder({"ladder": ladder})
    assert str(raised.value) == (
        f"ladder = {ladder!r} must rise strictly from 0 to 100, e.g. [0, 5, 20, 100]"
    )


# Through real policies: a bare Pod or a CronJob is judged by the pod spec and labels it carries.


def ascend_pod(kind: str) -> dict[str, Any]:
    """An Ascend pod as a bare Pod or a CronJob named `npu-probe`, labelled as the ascend subset
    selects and requesting huawei.com/Ascend910, without nodeSelector or tolerations."""
    labels = {"app": "inference-service", "version": "green", "hardware": "ascend"}
    spec = {"containers": [container("ascend", ASCEND_IMAGE)]}
    metadata = {"name": "npu-probe", "namespace": NAMESPACE}
    if kind == "Pod":
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata | {"labels": labels}}
        return pod | {"spec": spec}
    template = {"metadata": {"labels": labels}, "spec": spec}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": metadata,
        "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}},
    }


@pytest.mark.parametrize("kind", ["Pod", "CronJob"])
def test_a_bare_pod_or_cron_job_requesting_ascend_must_be_pinned_to_the_ascend_pool(
    kind: str,
) -> None:
    assert resource_violations("accelerator-placement", [ascend_pod(kind)]) == [
        f"{kind} inference/npu-probe requests huawei.com/Ascend910 but its nodeSelector "
        "pool=None does not pin it to pool 'ascend'; set nodeSelector pool: ascend",
        f"{kind} inference/npu-probe requests huawei.com/Ascend910 but does not tolerate its "
        "pool's taint pool=ascend:NoSchedule, so its pods stay Pending; add the toleration",
    ]


@pytest.mark.parametrize("kind", ["Pod", "CronJob"])
def test_a_share_sent_to_a_bare_pod_or_cron_job_is_an_ascend_share(kind: str) -> None:
    """The ascend subset selects the object's pods by their labels, and their spec requests
    the Ascend resource: 30% to them is an Ascend share off the ladder."""
    stack = [o for o in good_stack(30) if o["metadata"]["name"] != "inference-green"]
    stack.append(ascend_pod(kind))
    assert stack_violations("ascend-weight-on-ladder", stack) == [
        f"VirtualService inference/inference-vs route 'split' sends 30% to Ascend pods ({kind} "
        "inference/npu-probe), which is not a ladder step (0, 5, 20, 50, 80, 100); set "
        "ascendWeight to one of them"
    ]
