"""Settings of the pods' hardening (stack config key `security`) and their scratch volumes.

- `runAsUser` / `runAsGroup` of the inference pods: at least 10000, above the UIDs host
  accounts use (checkov CKV_K8S_40), so a container escape lands on no host account.
- `requireImageDigests`: makes the pack's `images-pinned-by-digest` mandatory (advisory by
  default); `dualstack policy-config` takes it from the BASE stack config, so a change cannot
  switch off the rule it is judged by.
- `networkPolicy`: who may reach the inference pods and where they and the precision Job may
  connect (`components/network_policy.py` builds the objects).

A peer (`PeerSettings`) names pods by namespace and labels, or addresses by CIDR, as
NetworkPolicy peers do (kubernetes.io/docs/concepts/services-networking/network-policies):
`namespaces: ["*"]` is every namespace; names are matched on the label
`kubernetes.io/metadata.name`, which the API server sets on every namespace (Kubernetes >= 1.21).

Facts behind the defaults:
- the mesh: Istio's sidecar injector labels every injected pod `security.istio.io/tlsMode:
  istio`, so `{namespaces: ["*"], podLabels: {security.istio.io/tlsMode: istio}}` is "any pod
  with a sidecar", the clients whose sidecar applies the VirtualService split;
- the ingress gateway of a default Istio install runs in `istio-system` labelled
  `istio: ingressgateway`; istiod is labelled `app: istiod` and serves xDS and certificates
  on 15012 (istio.io/latest/docs/ops/deployment/application-requirements, "Ports used by
  Istio"): a sidecar that cannot reach it never becomes ready;
- scrape ports: 15020 is the Istio agent's merged `/stats/prometheus` (Envoy's istio_*
  metrics plus the app's when metrics merging is on), 15090 Envoy's own
  (istio.io/latest/docs/ops/integrations/prometheus);
- DNS: CoreDNS pods keep the label `k8s-app: kube-dns` in `kube-system` and answer on 53 UDP
  and TCP. With NodeLocal DNSCache give its link-local address instead (`cidr:
  169.254.20.10/32`).
A NetworkPolicy judges a connection to a Service on the pod behind it (see
`components/network_policy.py`), so a destination gives the pods' own port (a Pushgateway's
9091), not the Service's.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from components.settings.base import ConfigModel
from components.settings.scalars import Bool, Int

ALL_NAMESPACES = "*"
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
_QUANTITY = r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$"
# A label key: optional DNS-subdomain prefix, then a name (Kubernetes qualified name).
_LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"

HighId = Annotated[Int, Field(ge=10000, le=2147483647)]
"""A UID or GID of at least 10000 (checkov CKV_K8S_40: above the IDs host accounts use)."""
GroupId = Annotated[Int, Field(ge=1, le=2147483647)]
"""A supplemental GID (not 0, root's group)."""

HWHIAIUSER_GID = 1000
"""GID of HwHiAiUser, the group of the Ascend driver's run user. CANN's run user must share
the driver run user's group (CANN installation guide, "准备安装和运行用户"), and MindCluster
expects HwHiAiUser to be UID/GID 1000 on every host and in every container (MindCluster
installation, "创建用户"). The Ascend pods get it as a supplemental group, so a UID >= 10000
can still open the driver's files."""


class PortSettings(ConfigModel):
    """One port of a NetworkPolicy rule."""

    port: Int = Field(ge=1, le=65535, description="Port number (the pod's, not a Service's).")
    protocol: Literal["TCP", "UDP", "SCTP"] = Field("TCP", description="IP protocol.")

    def as_port(self) -> dict[str, object]:
        """`{port, protocol}` as in `NetworkPolicyPort`."""
        return {"port": self.port, "protocol": self.protocol}


class PeerSettings(ConfigModel):
    """Who a rule admits: pods matching `podLabels` in `namespaces`, or the block `cidr`."""

    namespaces: tuple[str, ...] | None = Field(
        None,
        min_length=1,
        description='Namespace names, or ["*"] for every namespace; with podLabels, only those '
        "pods. Not together with cidr.",
    )
    pod_labels: dict[str, str] = Field(
        default_factory=dict, description="Labels the pods must carry; {}: every pod."
    )
    cidr: str | None = Field(
        None, description="An IP block (e.g. an object store's range) instead of pods."
    )
    except_cidrs: tuple[str, ...] = Field(
        (), alias="except", description="Blocks inside `cidr` left out."
    )

    @field_validator("namespaces")
    @classmethod
    def _namespace_names(cls, names: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if names is None:
            return None
        if ALL_NAMESPACES in names and len(names) > 1:
            raise ValueError('"*" (every namespace) stands alone; drop the other names')
        bad = [n for n in names if n != ALL_NAMESPACES and not re.match(_DNS_LABEL, n)]
        if bad:
            raise ValueError(f"not namespace names (DNS-1123 labels) or '*': {', '.join(bad)}")
        return names

    @field_validator("pod_labels")
    @classmethod
    def _labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for key, value in labels.items():
            if not re.match(_LABEL_KEY, key) or not re.match(_LABEL_VALUE, value):
                raise ValueError(f"{key}={value!r} is not a Kubernetes label")
        return labels

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, cidr: str | None) -> str | None:
        if cidr is not None:
            try:
                ipaddress.ip_network(cidr)
            except ValueError:
                raise ValueError(f"{cidr!r} is not a CIDR block, e.g. 10.20.0.0/16") from None
        return cidr

    @model_validator(mode="after")
    def _one_kind(self) -> PeerSettings:
        if (self.cidr is None) == (self.namespaces is None):
            raise ValueError(
                'give either namespaces (e.g. ["monitoring"], or ["*"]) with optional '
                "podLabels, or a cidr"
            )
        if self.cidr is not None and self.pod_labels:
            raise ValueError("podLabels select pods; they cannot narrow a cidr")
        if self.except_cidrs and self.cidr is None:
            raise ValueError("except narrows a cidr; give cidr too")
        block = ipaddress.ip_network(self.cidr) if self.cidr else None
        for inner in self.except_cidrs:
            try:
                network = ipaddress.ip_network(inner)
            except ValueError:
                raise ValueError(f"except: {inner!r} is not a CIDR block") from None
            if block is None or network.version != block.version or not network.subnet_of(block):
                raise ValueError(f"except: {inner} is not inside cidr {self.cidr}")
        return self


class DestinationSettings(PeerSettings):
    """Where pods may connect: a peer and the ports open on it."""

    ports: tuple[PortSettings, ...] = Field(
        min_length=1, description="Ports open on the destination (its pods' own ports)."
    )


def _peer(namespaces: list[str], **labels: str) -> PeerSettings:
    return PeerSettings(namespaces=tuple(namespaces), pod_labels=labels)


MESH_TLS_LABEL = "security.istio.io/tlsMode"
"""Label Istio's injector puts on every pod it gives a sidecar (value `istio`)."""


class NetworkPolicySettings(ConfigModel):
    """The NetworkPolicies of the inference pods and of the precision Job (`enabled`)."""

    enabled: Bool = Field(True, description="Render the NetworkPolicies.")
    clients: tuple[PeerSettings, ...] = Field(
        (PeerSettings(namespaces=(ALL_NAMESPACES,), pod_labels={MESH_TLS_LABEL: "istio"}),),
        description="Who may call the serving port: the sources that carry the split. "
        "Default: every pod with an Istio sidecar, in any namespace.",
    )
    gateway_clients: tuple[PeerSettings, ...] = Field(
        (_peer(["istio-system"], istio="ingressgateway"),),
        description="Ingress gateway pods admitted on the serving port when istio.gateways "
        "binds the VirtualService to gateways.",
    )
    prometheus: PeerSettings = Field(
        _peer(["monitoring"]), description="Prometheus, admitted on scrapePorts only."
    )
    scrape_ports: tuple[PortSettings, ...] = Field(
        (PortSettings(port=15020), PortSettings(port=15090)),
        min_length=1,
        description="Ports Prometheus scrapes: the Istio agent's merged metrics (15020) and "
        "Envoy's (15090); add the serving port when the app's /metrics is scraped directly.",
    )
    dns: DestinationSettings = Field(
        DestinationSettings(
            namespaces=("kube-system",),
            pod_labels={"k8s-app": "kube-dns"},
            ports=(PortSettings(port=53, protocol="UDP"), PortSettings(port=53)),
        ),
        description="The cluster DNS every pod may query.",
    )
    mesh_control_plane: DestinationSettings = Field(
        DestinationSettings(
            namespaces=("istio-system",),
            pod_labels={"app": "istiod"},
            ports=(PortSettings(port=15012),),
        ),
        description="istiod (xDS and certificates); pods with a sidecar need it to start.",
    )
    egress: tuple[DestinationSettings, ...] = Field(
        (),
        description="Further destinations of the inference pods: model stores, registries "
        "the server downloads from (image pulls are the node's, not the pod's).",
    )
    pushgateway: DestinationSettings = Field(
        DestinationSettings(
            namespaces=("monitoring",),
            pod_labels={"app.kubernetes.io/name": "prometheus-pushgateway"},
            ports=(PortSettings(port=9091),),
        ),
        description="The Pushgateway pods the precision Job pushes to (when "
        "precisionCheck.pushgatewayUrl is set).",
    )


class ScratchVolume(ConfigModel):
    """A writable emptyDir in a container whose root filesystem is read-only."""

    name: Annotated[str, Field(pattern=_DNS_LABEL, max_length=63)] = Field(
        description="Volume name."
    )
    mount_path: str = Field(description="Absolute path it is mounted at.")
    size_limit: Annotated[str, Field(pattern=_QUANTITY)] | None = Field(
        None, description="emptyDir sizeLimit (the pod is evicted beyond it); null: unbounded."
    )
    env: tuple[Annotated[str, Field(pattern=_ENV_NAME)], ...] = Field(
        (), description="Environment variables set to mountPath (e.g. ASCEND_CACHE_PATH)."
    )

    @field_validator("mount_path")
    @classmethod
    def _absolute(cls, path: str) -> str:
        if not path.startswith("/") or posixpath.normpath(path) in ("/", "//"):
            raise ValueError("must be an absolute path below /, e.g. /var/cache/model")
        return posixpath.normpath(path)


def scratch_problem(scratch: tuple[ScratchVolume, ...], reserved: dict[str, str]) -> str | None:
    """Why a container's scratch volumes clash (a name, a mount path or an environment
    variable used twice, `reserved` {volume name: path} counting too); None when they do not."""
    names = [v.name for v in scratch] + list(reserved)
    paths = [v.mount_path for v in scratch] + list(reserved.values())
    for what, values in (("volume names", names), ("mount paths", paths)):
        if repeated := sorted({v for v in values if values.count(v) > 1}):
            return (
                f"{what} must be unique (the driver mount counts), repeated: {', '.join(repeated)}"
            )
    env = [name for v in scratch for name in v.env]
    if repeated := sorted({n for n in env if env.count(n) > 1}):
        return f"env {', '.join(repeated)} is set by two volumes"
    return None


TMP = ScratchVolume(name="tmp", mount_path="/tmp", size_limit="1Gi", env=("TMPDIR",))
MODEL_CACHE = ScratchVolume(
    name="model-cache", mount_path="/var/cache/inference", env=("XDG_CACHE_HOME",)
)
"""Downloaded models and library caches under XDG_CACHE_HOME (`~/.cache` otherwise)."""

ASCEND_SCRATCH = (
    TMP,
    MODEL_CACHE,
    ScratchVolume(name="ascend-cache", mount_path="/var/cache/ascend", env=("ASCEND_CACHE_PATH",)),
    ScratchVolume(name="ascend-work", mount_path="/var/lib/ascend", env=("ASCEND_WORK_PATH",)),
)
"""The Ascend pod's scratch volumes. Where CANN writes (CANN environment-variable reference,
hiascend.com `envref_07_0006` ASCEND_CACHE_PATH and `envref_07_0007` ASCEND_WORK_PATH, CANN
8.x): operator compile caches go to `${ASCEND_CACHE_PATH}/kernel_cache` (and AOE's
`aoe_data`), else `$HOME/atc_data`; logs to `${ASCEND_WORK_PATH}/log` (ASCEND_PROCESS_LOG_PATH
first, else `$HOME/ascend/log`), traces to `atrace`, operator build files to `kernel_meta`
(else the current directory) and profiling data under ASCEND_WORK_PATH. With a read-only root
and a UID that has no home, each of those needs a writable directory, so both variables point
at emptyDirs. Some CANN releases require ASCEND_CACHE_PATH to exist: the mount root does."""

NVIDIA_SCRATCH = (TMP, MODEL_CACHE)
"""The NVIDIA pod's scratch volumes: /tmp (TMPDIR; torch inductor's default cache is under
it) and the model/library cache."""


class SecuritySettings(ConfigModel):
    """Pod identity and hardening of the inference pods, and their NetworkPolicies."""

    run_as_user: HighId = Field(10001, description="UID of the inference containers (>= 10000).")
    run_as_group: HighId = Field(10001, description="GID of the inference containers (>= 10000).")
    require_image_digests: Bool = Field(
        False,
        description="Make the policy images-pinned-by-digest mandatory (advisory otherwise); "
        "taken from the base stack config in a pull request.",
    )
    network_policy: NetworkPolicySettings = Field(default_factory=NetworkPolicySettings)
