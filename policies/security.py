"""Security policies: a hardened baseline for every workload, and the one hostPath exception.

The baseline follows the Kubernetes Pod Security Standards "restricted" profile
(kubernetes.io/docs/concepts/security/pod-security-standards): run as non-root, no privilege
escalation, drop ALL capabilities, not privileged, no host namespaces, no hostPath. Resource
limits are required so one pod cannot starve an accelerator node.

The exception: the seed article's Ascend setup mounts the host's driver directory
(`/usr/local/Ascend/driver`) into the container, because the CANN runtime in the image loads
the driver libraries installed on the node. That hostPath is allowed only for the configured
driver paths and only read-only, and `accelerator-driver-hostpath` reports each such mount as
an advisory so it stays visible.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from policies.common import (
    ConfigError,
    config_errors_are_violations,
    config_value,
    containers,
    describe,
    kind_of,
    mapping,
    pod_template_spec,
    sequence,
)

DEFAULT_DRIVER_HOST_PATHS = ("/usr/local/Ascend/driver",)
"""Host paths a workload may mount read-only (the Ascend driver, as in the seed article)."""

DRIVER_PATHS_SCHEMA = {
    "type": "array",
    "items": {"type": "string"},
    "default": list(DEFAULT_DRIVER_HOST_PATHS),
    "description": "Host paths (accelerator drivers) a pod may mount, read-only only.",
}


def _driver_paths(config: Mapping[str, Any]) -> set[str]:
    raw = config_value(config, "driverHostPaths", DEFAULT_DRIVER_HOST_PATHS)
    paths = sequence(raw)
    if not all(isinstance(p, str) and p.startswith("/") for p in paths) or isinstance(raw, str):
        raise ConfigError(f"driverHostPaths = {raw!r} must be a list of absolute paths")
    return {posixpath.normpath(p) for p in paths}


def container_problems(container: Mapping[str, Any], pod_context: Mapping[str, Any]) -> list[str]:
    """What in one container breaks the baseline, each with its fix; [] when it is clean."""
    context = mapping(container.get("securityContext"))
    problems = []
    non_root = context.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
    if non_root is not True:
        problems.append(f"runAsNonRoot is {non_root!r}; set runAsNonRoot: true")
    user = context.get("runAsUser", pod_context.get("runAsUser"))
    if user is not None and user == 0:
        problems.append("runAsUser is 0 (root); run as a non-zero user")
    if context.get("allowPrivilegeEscalation") is not False:
        problems.append(
            f"allowPrivilegeEscalation is {context.get('allowPrivilegeEscalation')!r}; "
            "set it to false"
        )
    if context.get("privileged") is True:
        problems.append("privileged is true; remove it (the device plugin grants the devices)")
    dropped = [str(c).upper() for c in sequence(mapping(context.get("capabilities")).get("drop"))]
    if "ALL" not in dropped:
        problems.append("capabilities are not dropped; set capabilities.drop: [ALL]")
    limits = mapping(mapping(container.get("resources")).get("limits"))
    missing = [name for name in ("cpu", "memory") if name not in limits]
    if missing:
        problems.append(f"no {' or '.join(missing)} limit; set resources.limits")
    return problems


def host_path_volumes(spec: Mapping[str, Any]) -> dict[str, str]:
    """Volume name -> normalised host path, for the pod's hostPath volumes."""
    found = {}
    for volume in sequence(spec.get("volumes")):
        volume = mapping(volume)
        host = mapping(volume.get("hostPath"))
        if volume.get("hostPath") is not None:
            found[str(volume.get("name"))] = posixpath.normpath(str(host.get("path") or "/"))
    return found


def writable_mounts(spec: Mapping[str, Any], volume: str) -> list[str]:
    """Names of the containers that mount `volume` without `readOnly: true`."""
    return [
        str(c.get("name") or "?")
        for c in containers(spec)
        for mount in sequence(c.get("volumeMounts"))
        if mapping(mount).get("name") == volume and mapping(mount).get("readOnly") is not True
    ]


def _workload_security_baseline(
    args: ResourceValidationArgs, report_violation: ReportViolation
) -> None:
    """Every container runs as non-root without privilege escalation, with ALL capabilities
    dropped and cpu/memory limits; no host namespaces; hostPath only for `driverHostPaths` and
    mounted read-only."""
    props = mapping(args.props)
    spec = pod_template_spec(kind_of(args.resource_type), props)
    if spec is None:
        return
    allowed = _driver_paths(args.get_config())
    where = describe(args.resource_type, props)
    pod_context = mapping(spec.get("securityContext"))
    for container in containers(spec):
        problems = container_problems(container, pod_context)
        if problems:
            name = container.get("name") or "?"
            report_violation(f"{where} container {name!r}: {'; '.join(problems)}", None)
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field) is True:
            report_violation(f"{where} sets {field}: true; remove it", None)
    for volume, host in sorted(host_path_volumes(spec).items()):
        if host not in allowed:
            report_violation(
                f"{where} mounts hostPath {host} (volume {volume!r}); only the driver paths "
                f"{', '.join(sorted(allowed)) or '(none)'} may be mounted; remove the volume",
                None,
            )
        elif writers := writable_mounts(spec, volume):
            report_violation(
                f"{where} mounts driver hostPath {host} writable in {', '.join(writers)}; "
                "set readOnly: true on the mount",
                None,
            )


workload_security_baseline_validator = config_errors_are_violations(_workload_security_baseline)
"""`_workload_security_baseline` wrapped by `config_errors_are_violations`
(applied by call, not with `@`: mutmut mutates no decorated function)."""


def _accelerator_driver_hostpath(
    args: ResourceValidationArgs, report_violation: ReportViolation
) -> None:
    """Advisory: names each read-only mount of an allowed driver hostPath, with the reason."""
    props = mapping(args.props)
    spec = pod_template_spec(kind_of(args.resource_type), props)
    if spec is None:
        return
    allowed = _driver_paths(args.get_config())
    for volume, host in sorted(host_path_volumes(spec).items()):
        if host in allowed and not writable_mounts(spec, volume):
            report_violation(
                f"{describe(args.resource_type, props)} mounts the host's {host} read-only "
                f"(volume {volume!r}): an allowed exception to the no-hostPath baseline, because "
                "the CANN runtime in the image loads the driver installed on the node (the seed "
                "article's setup); keep it read-only and limited to this path",
                None,
            )


accelerator_driver_hostpath_validator = config_errors_are_violations(_accelerator_driver_hostpath)
"""`_accelerator_driver_hostpath` wrapped by `config_errors_are_violations`
(applied by call, not with `@`: mutmut mutates no decorated function)."""


POLICIES = [
    ResourceValidationPolicy(
        name="workload-security-baseline",
        description="Workloads run non-root, without privilege escalation, with capabilities "
        "dropped and resource limits set; hostPath only for the driver path and read-only.",
        validate=workload_security_baseline_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"driverHostPaths": DRIVER_PATHS_SCHEMA}),
    ),
    ResourceValidationPolicy(
        name="accelerator-driver-hostpath",
        description="Advisory: a read-only mount of the accelerator driver's host path is an "
        "allowed exception to the security baseline, reported so it stays visible.",
        validate=accelerator_driver_hostpath_validator,
        enforcement_level=EnforcementLevel.ADVISORY,
        config_schema=PolicyConfigSchema(properties={"driverHostPaths": DRIVER_PATHS_SCHEMA}),
    ),
]
"""The security policies, in report order."""
