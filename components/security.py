"""Pod hardening shared by the inference workloads and the precision Job (pure functions).

Every pod runs under its own ServiceAccount with `automountServiceAccountToken: false`: none of
them calls the Kubernetes API, and a mounted token is the first thing an attacker inside a pod
uses. Istio's injector mounts its own short-lived `istio-token` (audience `istio-ca`) for the
sidecar, independent of this setting. Each container runs as a UID >= 10000 with a read-only
root filesystem; whatever must be written goes to an emptyDir (`scratch` volumes).

The image pull policy is chosen per image (`pull_policy`):
- pinned by digest -> `IfNotPresent`: the digest names the content, so a node's cached copy
  is exactly the image asked for, and starting a pod (a rollback's scale-up included) does not
  depend on the registry answering;
- pinned by tag -> `Always`: the kubelet resolves the tag at the registry on every start, so
  all pods of a Deployment run what the tag names now (a re-pushed tag cannot leave old nodes
  on stale content) and every start proves the pod may pull the image (a cached private image
  is not reused without credentials). Unchanged layers are not downloaded again.
checkov's CKV_K8S_15 accepts both: `Always`, or any policy for an image pinned by digest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from components.settings import parse_image
from components.settings.security import ScratchVolume


def pull_policy(image: str) -> str:
    """`IfNotPresent` for an image pinned by digest, `Always` for one pinned by tag."""
    _repository, _tag, digest = parse_image(image)
    return "IfNotPresent" if digest else "Always"


def service_account_fields() -> dict[str, Any]:
    """The fields of a ServiceAccount beside its metadata: it mounts no API token into pods by
    default."""
    return {"automountServiceAccountToken": False}


def container_security_context() -> dict[str, Any]:
    """A container's securityContext: non-root, read-only root, no privilege, no capability."""
    return {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }


def pod_security_context(
    user: int, group: int, supplemental_groups: Iterable[int] = ()
) -> dict[str, Any]:
    """A pod's securityContext: the UID/GID, extra groups, and the runtime's seccomp profile."""
    context: dict[str, Any] = {
        "runAsNonRoot": True,
        "runAsUser": user,
        "runAsGroup": group,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if groups := list(supplemental_groups):
        context["supplementalGroups"] = groups
    return context


def scratch_volumes(scratch: Iterable[ScratchVolume]) -> list[dict[str, Any]]:
    """The emptyDir volumes of `scratch`, `sizeLimit` where set."""
    volumes = []
    for volume in scratch:
        empty_dir = {"sizeLimit": volume.size_limit} if volume.size_limit else {}
        volumes.append({"name": volume.name, "emptyDir": empty_dir})
    return volumes


def scratch_mounts(scratch: Iterable[ScratchVolume]) -> list[dict[str, Any]]:
    """A container's mounts of the `scratch` volumes (writable)."""
    return [{"name": v.name, "mountPath": v.mount_path} for v in scratch]


def scratch_env(scratch: Iterable[ScratchVolume]) -> list[dict[str, str]]:
    """`{name, value}` for every environment variable a scratch volume points at itself."""
    return [{"name": name, "value": v.mount_path} for v in scratch for name in v.env]
