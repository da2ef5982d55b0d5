"""The stack's settings: one validated, frozen pydantic tree built from `Pulumi.<stack>.yaml`.

Every key of the project's config namespace (`dualstack-inference:<key>`) maps to one field of
`Settings`; the defaults reproduce the cluster of the seed article (namespace `inference`,
nodes `nvidia-01..03` and `ascend-01..02`, images `registry/inference-service:v1.2.3-cuda` and
`-npu`, port 8000, ladder 0/5/20/50/80/100). `Pulumi.yaml` describes the keys; the defaults live
here only.

`load_settings()` is the single entry point. It raises `SettingsError`, whose message has one
line per bad key naming the key, the value seen and what is allowed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from components.settings.base import ConfigModel
from components.settings.images import pinned_image
from components.settings.monitoring import MonitoringSettings
from components.settings.policy import PolicySettings
from components.settings.precision import PrecisionCheckSettings
from components.settings.routing import (
    BakeTime,
    GatewayApiSettings,
    Router,
    TesterPinningSettings,
    mirror_problem,
)
from components.settings.security import (
    ASCEND_SCRATCH,
    HWHIAIUSER_GID,
    NVIDIA_SCRATCH,
    GroupId,
    ScratchVolume,
    SecuritySettings,
    scratch_problem,
)
from components.settings.slo import SloSettings

PROJECT = "dualstack-inference"
HARDWARE = ("nvidia", "ascend")
"""The two hardware kinds, in the order they are rendered and routed."""
TOTAL_WEIGHT = 100
"""Sum of the route weights in % (REFERENCE.md: Istio rejects 0, older meshes require 100)."""

Hardware = Literal["nvidia", "ascend"]

# A DNS-1123 label: Kubernetes names of namespaces, Services and label values we generate.
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DnsLabel = Annotated[str, Field(pattern=_DNS_LABEL, max_length=63)]
Percent = Annotated[int, Field(ge=0, le=100)]


class SettingsError(ValueError):
    """Raised when the stack config is invalid; the message is one line per bad key."""


Image = Annotated[str, Field(min_length=1)]


# A taint key: an optional DNS-subdomain prefix and a name (Kubernetes qualified name).
_TAINT_KEY = (
    r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_TAINT_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"


class TaintSettings(ConfigModel):
    """One node taint `key=value:effect`, as in `Node.spec.taints`."""

    key: str = Field(pattern=_TAINT_KEY, description="Taint key, e.g. `nvidia.com/gpu`.")
    value: str = Field("", pattern=_TAINT_VALUE, description="Taint value; may be empty.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        description="What the taint does to pods that do not tolerate it."
    )

    def as_taint(self) -> dict[str, str]:
        """The `{key, value, effect}` dict of `Node.spec.taints`."""
        return {"key": self.key, "value": self.value, "effect": self.effect}


class PoolSettings(ConfigModel):
    """A node pool: the nodes that carry one accelerator, their labels and their taints.

    Every node gets the labels `pool=<name>` plus `labels`, and the taint
    `pool=<name>:NoSchedule`, so only pods that tolerate the pool land on it.

    `Node.spec.taints` is an atomic list for server-side apply: whoever applies it owns the
    whole list (Kubernetes API reference, Node `spec.taints`: no `x-kubernetes-list-type: map`).
    `extraTaints` are the node's other taints (cloud GPU taints, maintenance taints) that the
    patch must keep; `forcePatch` takes over fields other managers own.
    """

    name: DnsLabel = Field(description="Pool name; the value of the `pool` label and taint.")
    nodes: tuple[DnsLabel, ...] = Field(
        min_length=1, description="Names of the Kubernetes nodes in the pool."
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="Extra node labels (accelerator, model, status)."
    )
    accelerators_per_node: int = Field(
        8, ge=1, description="Accelerator devices each node offers (for capacity checks)."
    )
    extra_taints: tuple[TaintSettings, ...] = Field(
        (),
        description="Taints the patch keeps on every node of the pool, after the pool taint; "
        "the node's taint list is atomic, so a taint not listed here is removed.",
    )
    force_patch: bool = Field(
        False,
        description="Force the patch over field-manager conflicts (`pulumi.com/patchForce`): "
        "takes over the labels set and the WHOLE taint list of each node, whoever set them.",
    )

    @field_validator("extra_taints")
    @classmethod
    def _distinct_taints(cls, taints: tuple[TaintSettings, ...]) -> tuple[TaintSettings, ...]:
        seen = {("pool", "NoSchedule")}
        for taint in taints:
            if (taint.key, taint.effect) in seen:
                raise ValueError(
                    f"taint {taint.key}:{taint.effect} is given twice (the pool taint is "
                    "pool:NoSchedule); a node holds one taint per key and effect"
                )
            seen.add((taint.key, taint.effect))
        return taints

    @field_validator("nodes")
    @classmethod
    def _unique_nodes(cls, nodes: tuple[str, ...]) -> tuple[str, ...]:
        duplicates = sorted({n for n in nodes if nodes.count(n) > 1})
        if duplicates:
            raise ValueError(f"node names must be unique, repeated: {', '.join(duplicates)}")
        return nodes

    @property
    def node_labels(self) -> dict[str, str]:
        """All labels a node of this pool carries: `pool=<name>` plus `labels`."""
        return {"pool": self.name, **self.labels}


class ResourceSettings(ConfigModel):
    """CPU and memory requests and limits of one inference container (Kubernetes quantities)."""

    cpu_request: str = Field("4", description="CPU request, e.g. `4` or `500m`.")
    memory_request: str = Field("32Gi", description="Memory request, e.g. `32Gi`.")
    cpu_limit: str = Field("8", description="CPU limit.")
    memory_limit: str = Field("64Gi", description="Memory limit.")


class HardwareSettings(ConfigModel):
    """One backend of the service: its Deployment, image, accelerator and node pool."""

    deployment_name: DnsLabel = Field(description="Name of the Deployment.")
    version: DnsLabel = Field(description="Value of the pods' `version` label (blue/green).")
    image: Image = Field(description="Container image, pinned by tag or digest.")
    accelerator_resource: str = Field(
        description="Extended resource the device plugin advertises, e.g. `nvidia.com/gpu`."
    )
    accelerators_per_pod: int = Field(1, ge=1, description="Accelerators each pod requests.")
    pool: PoolSettings = Field(description="The node pool the pods are pinned to.")
    driver_host_path: str | None = Field(
        None, description="Host path of the accelerator driver, mounted read-only at the same path."
    )
    resources: ResourceSettings = Field(default_factory=ResourceSettings)
    scratch: tuple[ScratchVolume, ...] = Field(
        NVIDIA_SCRATCH,
        description="Writable emptyDirs (the root filesystem is read-only): /tmp, caches.",
    )
    supplemental_groups: tuple[GroupId, ...] = Field(
        (), description="Extra GIDs of the pod's processes (e.g. the accelerator's device group)."
    )

    @field_validator("image")
    @classmethod
    def _image_is_pinned(cls, image: str) -> str:
        return pinned_image(image)

    @model_validator(mode="after")
    def _distinct_scratch(self) -> HardwareSettings:
        driver = {"accelerator-driver": self.driver_host_path} if self.driver_host_path else {}
        if problem := scratch_problem(self.scratch, driver):
            raise ValueError(f"scratch: {problem}")
        return self


class NvidiaSettings(HardwareSettings):
    """The NVIDIA backend (the article's blue Deployment on the A100 pool)."""

    deployment_name: DnsLabel = "inference-blue"
    version: DnsLabel = "blue"
    image: Image = "registry/inference-service:v1.2.3-cuda"
    accelerator_resource: str = "nvidia.com/gpu"
    pool: PoolSettings = PoolSettings(
        name="nvidia",
        nodes=("nvidia-01", "nvidia-02", "nvidia-03"),
        labels={
            "accelerator": "nvidia-gpu",
            "gpu-model": "A100-80G",
            "migration-status": "stable",
        },
    )


class AscendSettings(HardwareSettings):
    """The Ascend backend (the article's green Deployment on the 910B pool)."""

    deployment_name: DnsLabel = "inference-green"
    version: DnsLabel = "green"
    image: Image = "registry/inference-service:v1.2.3-npu"
    accelerator_resource: str = "huawei.com/Ascend910"
    pool: PoolSettings = PoolSettings(
        name="ascend",
        nodes=("ascend-01", "ascend-02"),
        labels={
            "accelerator": "huawei-npu",
            "npu-model": "910B",
            "migration-status": "testing",
        },
    )
    driver_host_path: str | None = "/usr/local/Ascend/driver"
    scratch: tuple[ScratchVolume, ...] = ASCEND_SCRATCH
    supplemental_groups: tuple[GroupId, ...] = (HWHIAIUSER_GID,)


class ServiceSettings(ConfigModel):
    """The inference service as clients see it."""

    name: DnsLabel = Field(
        "inference-service", description="Shared Service; also the `app` label value."
    )
    port: int = Field(8000, ge=1, le=65535, description="Service and container port.")


class ProbeSettings(ConfigModel):
    """HTTP startup, readiness and liveness probes of the inference container (seconds)."""

    path: str = Field("/health", pattern=r"^/", description="HTTP path answering 200 when ready.")
    initial_delay_seconds: int = Field(
        30, ge=0, description="Delay before the first readiness probe after startup, s."
    )
    startup_timeout_seconds: int = Field(
        600, ge=0, description="Time a new pod may take to load its model and answer, s."
    )
    period_seconds: int = Field(10, ge=1, description="Probe interval, s.")
    timeout_seconds: int = Field(5, ge=1, description="Probe timeout, s.")
    failure_threshold: int = Field(3, ge=1, description="Failures before unready/restart.")


class CapacitySettings(ConfigModel):
    """How many pods each backend runs; see `components.capacity` for the formula."""

    total_replicas: int = Field(
        4, ge=1, description="NVIDIA pods that serve 100% of traffic (the article's 4)."
    )
    headroom: float = Field(
        1.2, ge=1.0, le=3.0, description="Over-provisioning factor on Ascend's share."
    )
    ascend_capacity_ratio: float = Field(
        1.0, gt=0, le=10, description="Throughput of one Ascend pod relative to one NVIDIA pod."
    )
    retired_nvidia_replicas: int = Field(
        1, ge=0, description="NVIDIA pods kept at weight 100 (warm for rollback and checks)."
    )


class IstioSettings(ConfigModel):
    """Names and API version of the Istio objects that split traffic."""

    api_version: Literal["networking.istio.io/v1", "networking.istio.io/v1beta1"] = Field(
        "networking.istio.io/v1", description="v1 is GA since Istio 1.22; v1beta1 for older."
    )
    gateways: tuple[str, ...] = Field(
        (),
        description="Istio Gateways (`namespace/name`) the VirtualService also binds; empty "
        "means sidecar (mesh) traffic only, as in the article.",
    )
    hosts: tuple[str, ...] = Field(
        (), description="Extra hosts the VirtualService answers for (the gateways' hostnames)."
    )
    virtual_service_name: DnsLabel = "inference-vs"
    destination_rule_name: DnsLabel = "inference-dr"


class Settings(ConfigModel):
    """Everything one stack configures. Keys are `dualstack-inference:<camelCaseKey>`."""

    ladder: tuple[Percent, ...] = Field(
        (0, 5, 20, 50, 80, 100), description="Allowed Ascend weights, in migration order."
    )
    ascend_weight: Percent = Field(
        description="% of requests routed to Ascend; must be a step of `ladder`."
    )
    namespace: DnsLabel = Field("inference", description="Namespace of every namespaced object.")
    service: ServiceSettings = Field(default_factory=ServiceSettings)
    nvidia: NvidiaSettings = Field(default_factory=NvidiaSettings)
    ascend: AscendSettings = Field(default_factory=AscendSettings)
    capacity: CapacitySettings = Field(default_factory=CapacitySettings)
    probes: ProbeSettings = Field(default_factory=ProbeSettings)
    istio: IstioSettings = Field(default_factory=IstioSettings)
    verified_ascend_image: str | None = Field(
        None, description="Ascend image whose precision check passed (written by the tooling)."
    )
    slo: SloSettings = Field(default_factory=SloSettings)
    monitoring: MonitoringSettings = Field(default_factory=MonitoringSettings)
    precision_check: PrecisionCheckSettings = Field(default_factory=PrecisionCheckSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    router: Router = Field(
        "istio", description="What splits traffic: Istio VirtualService, or Gateway API HTTPRoute."
    )
    gateway_api: GatewayApiSettings = Field(default_factory=GatewayApiSettings)
    tester_pinning: TesterPinningSettings = Field(default_factory=TesterPinningSettings)
    mirror_percent: Percent = Field(
        0, description="% of requests mirrored to Ascend (responses discarded); weight 0 only."
    )
    bake_time: BakeTime = Field(
        "24h", description="How long the current rung must hold before the next promotion."
    )

    @field_validator("ladder")
    @classmethod
    def _ladder_shape(cls, ladder: tuple[int, ...]) -> tuple[int, ...]:
        if list(ladder) != sorted(set(ladder)) or ladder[:1] != (0,) or ladder[-1:] != (100,):
            raise ValueError("must rise strictly from 0 to 100, e.g. [0, 5, 20, 50, 80, 100]")
        return ladder

    @field_validator("ascend_weight")
    @classmethod
    def _weight_on_ladder(cls, weight: int, info: ValidationInfo) -> int:
        ladder = info.data.get("ladder")
        if ladder is not None and weight not in ladder:
            raise ValueError(f"not a ladder step; allowed: {', '.join(map(str, ladder))}")
        return weight

    @field_validator("mirror_percent")
    @classmethod
    def _mirror_at_zero(cls, percent: int, info: ValidationInfo) -> int:
        if problem := mirror_problem(percent, info.data.get("ascend_weight")):
            raise ValueError(problem)
        return percent

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if self.nvidia.pool.name == self.ascend.pool.name:
            raise ValueError(f"nvidia and ascend share the pool name {self.nvidia.pool.name!r}")
        shared = sorted(set(self.nvidia.pool.nodes) & set(self.ascend.pool.nodes))
        if shared:
            raise ValueError(f"nodes in both pools: {', '.join(shared)}")
        if self.nvidia.deployment_name == self.ascend.deployment_name:
            raise ValueError("nvidia and ascend need different deploymentName values")
        return self

    def hardware(self, kind: Hardware) -> HardwareSettings:
        """The settings of one backend: `settings.hardware("ascend")` is `settings.ascend`."""
        return self.nvidia if kind == "nvidia" else self.ascend

    @property
    def ladder_position(self) -> int:
        """Index of `ascend_weight` in `ladder` (0 = all NVIDIA)."""
        return self.ladder.index(self.ascend_weight)

    @property
    def next_step(self) -> int | None:
        """The ladder step after the current weight, or None at the top."""
        position = self.ladder_position
        return self.ladder[position + 1] if position + 1 < len(self.ladder) else None

    @property
    def ascend_load_percent(self) -> int:
        """% of requests Ascend handles: its weight, or the mirrored share at weight 0."""
        return max(self.ascend_weight, self.mirror_percent)

    @property
    def ascend_image_verified(self) -> bool:
        """True when the served Ascend image is the one whose precision check passed."""
        return self.verified_ascend_image == self.ascend.image


def _decode(value: Any) -> Any:
    """Pulumi hands structured config values to programs as JSON text; decode those."""
    if isinstance(value, str) and value[:1] and value[0] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _describe(error: dict[str, Any]) -> str:
    path = ".".join(str(part) for part in error["loc"])
    key = f"{PROJECT}:{path}" if path else PROJECT
    message = error["msg"].removeprefix("Value error, ")
    if (
        error["type"] == "string_pattern_mismatch"
        and error.get("ctx", {}).get("pattern") == _DNS_LABEL
    ):
        message = "not a DNS-1123 label (lowercase letters, digits and '-', 1 to 63 characters)"
    if error["type"] == "missing":
        flag = "--path " if "." in path else ""
        return f"{key}: missing; set it with `pulumi config set {flag}{path} <value>`"
    if error["type"] == "extra_forbidden":
        return f"{key}: unknown key (value {error['input']!r}); check its spelling"
    if error["loc"] and "input" in error and not isinstance(error["input"], dict):
        return f"{key} = {error['input']!r}: {message}"
    return f"{key}: {message}"


def load_settings(config: Mapping[str, Any], project: str = PROJECT) -> Settings:
    """Validate a stack's config into `Settings`.

    `config` maps full keys (`dualstack-inference:ascendWeight`) to values: strings as
    `pulumi config set` stores them, JSON text for structured keys, or already-decoded YAML
    values. Keys of other namespaces (`kubernetes:context`, `pulumi:...`) are ignored.

    Raises SettingsError with one line per problem, e.g.
    `dualstack-inference:ascendWeight = '150': Input should be less than or equal to 100`.
    """
    prefix = f"{project}:"
    raw = {k.removeprefix(prefix): _decode(v) for k, v in config.items() if k.startswith(prefix)}
    secrets = sorted(k for k, v in raw.items() if isinstance(v, dict) and set(v) == {"secure"})
    if secrets:
        raise SettingsError(
            "\n".join(
                f"{prefix}{k}: is an encrypted `secure:` value; no setting of this project is "
                "secret, so store it in plain text (`pulumi config set` without --secret)"
                for k in secrets
            )
        )
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        raise SettingsError("\n".join(_describe(e) for e in exc.errors())) from None
