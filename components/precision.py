"""The in-cluster precision check: per service a ConfigMap with its prompts, a Job running the
checker against both direct Services, optionally a CronJob re-running it, the pods'
ServiceAccount (no API token) and their NetworkPolicy (egress to the backends, DNS and the
Pushgateway only); per namespace one ConfigMap with the checker, named by its hash and shared
by every service's Job (`checker_manifest`).

The checker is the stdlib-only package `precision_check`, shipped file by file in the checker
ConfigMap and run as `python3 -m precision_check` in a stock Python image. The Job's name
carries a hash of everything it runs (both images, the check settings, the prompts, the
checker's source), so a new Ascend image means a new Job, and an unchanged stack keeps its
finished Job. pulumi-kubernetes waits for a Job to complete (pulumi/pulumi-kubernetes#633),
so a failed check also fails `pulumi up`. Pure functions: `components.resources.PrecisionCheck`
registers `precision_manifests`, the stack `checker_manifest`.

Job facts (kubernetes.io/docs/concepts/workloads/controllers/job/): `podFailurePolicy` needs
`restartPolicy: Never`; exit code 1 (a real mismatch) fails the Job at once, while exit 2
(could not complete, e.g. a backend still starting) is retried up to `backoffLimit`; pod
disruptions (eviction, preemption) are not counted against it.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

import precision_check as checker
from components.manifests import Manifest, manifest, object_metadata
from components.naming import direct_service_name, precision_labels, service_host
from components.network_policy import precision_policy_spec
from components.security import container_security_context, pull_policy, service_account_fields
from components.settings import Hardware, Settings
from components.settings.names import precision_prefix

PACKAGE = Path(checker.__file__).parent
MOUNT = "/opt/precision-check"
PROMPTS_KEY = "prompts.jsonl"
CONTAINER_NAME = "precision-check"
RUN_AS_USER = (
    65534  # `nobody` in Debian-based images such as the default python:3.12.7-slim-bookworm
)
MISMATCH_EXIT_CODE = checker.EXIT_MISMATCH
CHECKER_PREFIX = "dualstack-precision-checker"


@cache
def _checker_sources() -> tuple[tuple[str, str], ...]:
    # Read once per process: the package does not change while a render runs.
    return tuple(
        (path.name, path.read_text(encoding="utf-8")) for path in sorted(PACKAGE.glob("*.py"))
    )


def checker_files() -> dict[str, str]:
    """The checker's Python files by name (`cli.py` -> source), as shipped in the checker
    ConfigMap (the prompt sets travel as `prompts.jsonl`, the one file the Job reads, in each
    service's own ConfigMap)."""
    return dict(_checker_sources())


def checker_hash() -> str:
    """10 hex digits of SHA-256 over the checker's files (names and sources)."""
    payload = json.dumps(checker_files(), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:10]


def checker_config_map_name() -> str:
    """`dualstack-precision-checker-<checker_hash>`: the ConfigMap holding the checker, one
    per namespace, shared by the Job of every service there. Named by its content, so a new
    checker is a new ConfigMap (and a new Job), and a running Job's files never change."""
    return f"{CHECKER_PREFIX}-{checker_hash()}"


def checker_labels() -> dict[str, str]:
    """Labels of the shared checker ConfigMap: the check's name, no service (it is every
    service's, like the pools' NodePatches: `policies.members`)."""
    return {"app.kubernetes.io/name": CONTAINER_NAME}


def checker_manifest(name: str, namespace: str) -> Manifest:
    """The shared checker ConfigMap of `namespace`, registered as `name` by the stack: every
    checker file by name (`checker_files`)."""
    return manifest(
        name,
        "v1",
        "ConfigMap",
        object_metadata(checker_config_map_name(), namespace, checker_labels()),
        {"data": checker_files()},
    )


def prompts_jsonl(settings: Settings) -> str:
    """The prompts the Job sends, as JSON lines: the stack's `prompts`, or the built-in set
    of its mode (the accuracy mode's carries the reference answers)."""
    check = settings.precision_check
    prompts = check.prompt_list() or checker.load_prompts(None, check.mode)
    return checker.to_jsonl(prompts)


def config_map_data(settings: Settings) -> dict[str, str]:
    """The service's own ConfigMap data: `prompts.jsonl` (the checker is shared,
    `checker_manifest`)."""
    return {PROMPTS_KEY: prompts_jsonl(settings)}


def backend_url(settings: Settings, hardware: Hardware) -> str:
    """Base URL of one backend's direct Service, bypassing the split:
    `http://inference-service-ascend.inference.svc.cluster.local:8000`."""
    host = service_host(settings, direct_service_name(settings, hardware))
    return f"http://{host}:{settings.service.port}"


def push_labels(settings: Settings) -> tuple[str, ...]:
    """The Pushgateway grouping labels of the Job's result: `namespace=<ns>`, and for a fleet
    member also `service=<name>` (the services of one namespace push to their own groups; the
    gate and the alerts select by the same labels, `components.monitoring.rules.scope_labels`)."""
    labels = [f"namespace={settings.namespace}"]
    if settings.member is not None:
        labels.append(f"service={settings.member}")
    return tuple(labels)


def check_options(settings: Settings) -> checker.Options:
    """What the Job checks: both direct Services, the stack's check settings and images."""
    check = settings.precision_check
    # The backends' hosts are cluster-local names: off the cluster they do not resolve, and
    # asking a resolver for each (two per service, seconds when it is slow) made the render
    # wait on the network. Compared as text here; the Job's run compares their addresses.
    unresolved = checker.servers.RESOLVE.set(False)
    try:
        return checker.Options(
            nvidia=backend_url(settings, "nvidia"),
            ascend=backend_url(settings, "ascend"),
            prompts=f"{MOUNT}/{PROMPTS_KEY}",
            nvidia_image=settings.nvidia.image,
            ascend_image=settings.ascend.image,
            pushgateway=check.pushgateway_url,
            push_labels=push_labels(settings) if check.pushgateway_url else (),
            **check.check_fields(),
        )
    finally:
        checker.servers.RESOLVE.reset(unresolved)


def names(settings: Settings) -> dict[str, str]:
    """Object name prefixes: ConfigMap, Job (hash appended), CronJob, and the ServiceAccount
    and NetworkPolicy of their pods; all within the 63-character limit of a Job name (its pods
    get a `job-name` label)."""
    prefix = precision_prefix(settings.service.name)
    return {
        "configMap": f"{prefix}-check",
        "job": prefix,
        "cronJob": f"{prefix}-recheck",
        "serviceAccount": f"{prefix}-check",
        "networkPolicy": f"{prefix}-check",
    }


def labels(settings: Settings) -> dict[str, str]:
    """Labels of every object of the check (`components.naming.precision_labels`)."""
    return precision_labels(settings)


def pod_template(settings: Settings) -> dict[str, Any]:
    """The check's pod: its own ServiceAccount with no token mounted, non-root, read-only root
    filesystem, no capabilities, bounded CPU and memory; mounted read-only in one folder, the
    shared checker (`precision_check/*.py`, `checker_config_map_name`) and the service's
    prompts (`prompts.jsonl`), one projected volume of the two ConfigMaps."""
    check = settings.precision_check
    res = check.resources
    files = [{"key": name, "path": f"precision_check/{name}"} for name in checker_files()]
    prompts = [{"key": PROMPTS_KEY, "path": PROMPTS_KEY}]
    return {
        "metadata": {
            # Without native sidecars an injected Envoy keeps the pod, and the Job, running.
            "labels": {
                **labels(settings),
                "sidecar.istio.io/inject": str(check.istio_sidecar).lower(),
            },
        },
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": names(settings)["serviceAccount"],
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": RUN_AS_USER,
                "runAsGroup": RUN_AS_USER,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [
                {
                    "name": CONTAINER_NAME,
                    "image": check.image,
                    "imagePullPolicy": pull_policy(check.image),
                    "workingDir": MOUNT,
                    "command": ["python3", "-B", "-u", "-m", "precision_check"],
                    "args": checker.to_argv(check_options(settings)),
                    "resources": {
                        "requests": {"cpu": res.cpu_request, "memory": res.memory_request},
                        "limits": {"cpu": res.cpu_limit, "memory": res.memory_limit},
                    },
                    "securityContext": container_security_context(),
                    "volumeMounts": [{"name": "checker", "mountPath": MOUNT, "readOnly": True}],
                }
            ],
            "volumes": [
                {
                    "name": "checker",
                    "projected": {
                        "sources": [
                            {"configMap": {"name": checker_config_map_name(), "items": files}},
                            {"configMap": {"name": names(settings)["configMap"], "items": prompts}},
                        ],
                        "defaultMode": 0o444,
                    },
                }
            ],
        },
    }


def job_spec(settings: Settings) -> dict[str, Any]:
    """The Job spec: bounded retries and run time, cleaned up `ttlSecondsAfterFinished`
    after it ends; a mismatch (exit 1) fails it without a retry."""
    check = settings.precision_check
    return {
        "backoffLimit": check.backoff_limit,
        "activeDeadlineSeconds": check.active_deadline_seconds,
        "ttlSecondsAfterFinished": check.ttl_seconds_after_finished,
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "FailJob",
                    "onExitCodes": {
                        "containerName": CONTAINER_NAME,
                        "operator": "In",
                        "values": [MISMATCH_EXIT_CODE],
                    },
                },
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                },
            ]
        },
        "template": pod_template(settings),
    }


def job_hash(
    settings: Settings, spec: dict[str, Any] | None = None, data: dict[str, str] | None = None
) -> str:
    """10 hex digits of SHA-256 over the Job spec (images, check settings, the checker
    ConfigMap's name: the checker's hash) and the service's ConfigMap data (the prompts):
    equal stacks give equal hashes. `spec` and `data`, when given, are `job_spec(settings)`
    and `config_map_data(settings)` already built."""
    job = job_spec(settings) if spec is None else spec
    config_map = config_map_data(settings) if data is None else data
    payload = json.dumps({"job": job, "configMap": config_map}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:10]


def job_name(
    settings: Settings, spec: dict[str, Any] | None = None, data: dict[str, str] | None = None
) -> str:
    """`<service>-precision-<hash>`, e.g. `inference-service-precision-3f2a9c01de` (`spec`,
    `data`: as for `job_hash`)."""
    return f"{names(settings)['job']}-{job_hash(settings, spec, data)}"


def cron_job_spec(settings: Settings, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """A CronJob re-running the same check on `schedule`; never two runs at once (`spec`:
    `job_spec(settings)` already built)."""
    job = job_spec(settings) if spec is None else spec
    return {
        "schedule": settings.precision_check.schedule,
        "concurrencyPolicy": "Forbid",
        "startingDeadlineSeconds": 600,
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 3,
        "jobTemplate": {"metadata": {"labels": labels(settings)}, "spec": job},
    }


def precision_metadata(settings: Settings, object_name: str) -> dict[str, Any]:
    """`metadata` of an object of the check: `object_name` in the stack's namespace, with the
    check's labels."""
    return object_metadata(object_name, settings.namespace, labels(settings))


def precision_manifests(name: str, settings: Settings) -> dict[str, Manifest]:
    """The check's objects by role, each named `<name>-<role>`, in the order they are
    registered: `config` (ConfigMap of the prompts), `service-account`, `network-policy` (unless
    `security.networkPolicy.enabled` is false), `job` (named by `job_hash`), `cron` (when
    `precisionCheck.schedule` is set)."""
    object_names = names(settings)
    spec, data = job_spec(settings), config_map_data(settings)
    found = {
        "config": manifest(
            f"{name}-config",
            "v1",
            "ConfigMap",
            precision_metadata(settings, object_names["configMap"]),
            {"data": data},
        ),
        "service-account": manifest(
            f"{name}-service-account",
            "v1",
            "ServiceAccount",
            precision_metadata(settings, object_names["serviceAccount"]),
            service_account_fields(),
        ),
    }
    if settings.security.network_policy.enabled:
        found["network-policy"] = manifest(
            f"{name}-network-policy",
            "networking.k8s.io/v1",
            "NetworkPolicy",
            precision_metadata(settings, object_names["networkPolicy"]),
            {"spec": precision_policy_spec(settings)},
        )
    found["job"] = manifest(
        f"{name}-job",
        "batch/v1",
        "Job",
        precision_metadata(settings, job_name(settings, spec, data)),
        {"spec": spec},
    )
    if settings.precision_check.schedule:
        found["cron"] = manifest(
            f"{name}-cron",
            "batch/v1",
            "CronJob",
            precision_metadata(settings, object_names["cronJob"]),
            {"spec": cron_job_spec(settings, spec)},
        )
    return found
