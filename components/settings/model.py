"""The stack's settings model: one validated, frozen pydantic tree per service.

Every key of the project's config namespace (`dualstack-inference:<key>`) maps to one field of
`Settings`; the defaults reproduce the cluster of the seed article (namespace `inference`,
nodes `nvidia-01..03` and `ascend-01..02`, images `registry/inference-service:v1.2.3-cuda` and
`-npu`, port 8000, ladder 0/5/20/50/80/100). `Pulumi.yaml` describes the keys; the defaults live
here only.

The model only validates. `components.settings.loading` builds it from a stack's config
(`load_fleet`, `load_settings`: the entry points) and renders pydantic's errors as
`SettingsError`, one line per bad key naming the key, the value seen and what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from components import api_rules
from components import ladder as rungs
from components.settings.base import (
    ConfigModel,
    Quantity,
    api_rule,
    check_requests_within_limits,
    label_map,
)
from components.settings.evidence import VerifiedPair, pair_verified, verified_facts
from components.settings.gate import GateSettings
from components.settings.images import pinned_image
from components.settings.monitoring import MonitoringSettings
from components.settings.names import direct_service_name
from components.settings.policy import PolicySettings
from components.settings.precision import PrecisionCheckSettings
from components.settings.routing import (
    BakeTime,
    GatewayApiSettings,
    Router,
    TesterPinningSettings,
    mirror_problem,
)
from components.settings.scalars import INT32_MAX, Bool, Int, Number
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

DnsLabel = Annotated[str, api_rule(api_rules.dns1123_label)]
"""A DNS-1123 label: namespaces, object names that are also label values (`app`, `version`)."""
NodeName = Annotated[str, api_rule(api_rules.dns1123_subdomain)]
"""A node name is a DNS-1123 subdomain (ValidateNodeName): `ip-10-0-0-1.ec2.internal`."""
Percent = Annotated[Int, Field(ge=0, le=100)]
ExtendedResource = Annotated[str, api_rule(api_rules.extended_resource_name)]
"""An extended resource a device plugin advertises (`nvidia.com/gpu`)."""
HostPath = Annotated[str, api_rule(api_rules.absolute_path)]
"""An absolute path on the node, without `..`."""
Count32 = Annotated[Int, Field(ge=0, le=INT32_MAX)]
"""A count stored in an int32 API field (replicas, seconds of a probe)."""


class SettingsError(ValueError):
    """Raised when the stack config is invalid (`components.settings.loading`); the message is
    one line per bad key."""


Image = Annotated[str, Field(min_length=1)]


class TaintSettings(ConfigModel):
    """One node taint `key=value:effect`, as in `Node.spec.taints`."""

    key: Annotated[str, api_rule(api_rules.qualified_name)] = Field(
        description="Taint key, e.g. `nvidia.com/gpu`."
    )
    value: Annotated[str, api_rule(api_rules.label_value)] = Field(
        "", description="Taint value; may be empty."
    )
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
    nodes: tuple[NodeName, ...] = Field(
        min_length=1, description="Names of the Kubernetes nodes in the pool (DNS subdomains)."
    )
    labels: Annotated[dict[str, str], label_map(frozenset({"pool"}))] = Field(
        default_factory=dict,
        description="Extra node labels (accelerator, model, status); `pool` is the program's.",
    )
    accelerators_per_node: Int = Field(
        8, ge=1, le=INT32_MAX, description="Accelerator devices each node offers."
    )
    extra_taints: tuple[TaintSettings, ...] = Field(
        (),
        description="Taints the patch keeps on every node of the pool, after the pool taint; "
        "the node's taint list is atomic, so a taint not listed here is removed.",
    )
    force_patch: Bool = Field(
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
    """CPU and memory requests and limits of one inference container (Kubernetes quantities);
    a request may not exceed its limit (ValidateResourceRequirements)."""

    cpu_request: Quantity = Field("4", description="CPU request, e.g. `4` or `500m`.")
    memory_request: Quantity = Field("32Gi", description="Memory request, e.g. `32Gi`.")
    cpu_limit: Quantity = Field("8", description="CPU limit.")
    memory_limit: Quantity = Field("64Gi", description="Memory limit.")

    @model_validator(mode="after")
    def _requests_within_limits(self) -> ResourceSettings:
        check_requests_within_limits(self)
        return self


class HardwareSettings(ConfigModel):
    """One backend of the service: its Deployment, image, accelerator and node pool."""

    deployment_name: DnsLabel = Field(description="Name of the Deployment.")
    version: DnsLabel = Field(description="Value of the pods' `version` label (blue/green).")
    image: Image = Field(description="Container image, pinned by tag or digest.")
    accelerator_resource: ExtendedResource = Field(
        description="Extended resource the device plugin advertises, e.g. `nvidia.com/gpu`."
    )
    accelerators_per_pod: Int = Field(
        1, ge=1, le=INT32_MAX, description="Accelerators each pod requests."
    )
    pool: PoolSettings = Field(description="The node pool the pods are pinned to.")
    driver_host_path: HostPath | None = Field(
        None,
        description="Absolute host path of the accelerator driver, mounted read-only at the "
        "same path.",
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
    def _pod_fits_a_node(self) -> HardwareSettings:
        if self.accelerators_per_pod > self.pool.accelerators_per_node:
            raise ValueError(
                f"acceleratorsPerPod {self.accelerators_per_pod} is more than one node of the "
                f"pool offers (pool.acceleratorsPerNode {self.pool.accelerators_per_node}): "
                "such a pod can never be scheduled"
            )
        return self

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
    accelerator_resource: ExtendedResource = "nvidia.com/gpu"
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
    accelerator_resource: ExtendedResource = "huawei.com/Ascend910"
    pool: PoolSettings = PoolSettings(
        name="ascend",
        nodes=("ascend-01", "ascend-02"),
        labels={
            "accelerator": "huawei-npu",
            "npu-model": "910B",
            "migration-status": "testing",
        },
    )
    driver_host_path: HostPath | None = "/usr/local/Ascend/driver"
    scratch: tuple[ScratchVolume, ...] = ASCEND_SCRATCH
    supplemental_groups: tuple[GroupId, ...] = (HWHIAIUSER_GID,)


class ServiceSettings(ConfigModel):
    """The inference service as clients see it."""

    name: Annotated[str, api_rule(api_rules.dns1035_label)] = Field(
        "inference-service",
        description="Shared Service (a DNS-1035 label); also the `app` label value. The direct "
        "Services append `-nvidia` / `-ascend`, so at most 56 characters.",
    )
    port: Int = Field(8000, ge=1, le=65535, description="Service and container port.")

    @field_validator("name")
    @classmethod
    def _direct_names_fit(cls, name: str) -> str:
        longest = max((direct_service_name(name, hardware) for hardware in HARDWARE), key=len)
        if why := api_rules.dns1035_label(longest):
            raise ValueError(
                f"the direct Service {longest[:80]!r} ({len(longest)} characters) is {why}; "
                f"keep the name at most {api_rules.DNS1123_LABEL_MAX - len(longest) + len(name)}"
                " characters"
            )
        return name


class ProbeSettings(ConfigModel):
    """HTTP startup, readiness and liveness probes of the inference container (seconds)."""

    path: str = Field("/health", pattern=r"^/", description="HTTP path answering 200 when ready.")
    initial_delay_seconds: Count32 = Field(
        30, description="Delay before the first readiness probe after startup, s."
    )
    startup_timeout_seconds: Count32 = Field(
        600, description="Time a new pod may take to load its model and answer, s."
    )
    period_seconds: Count32 = Field(10, ge=1, description="Probe interval, s.")
    timeout_seconds: Count32 = Field(5, ge=1, description="Probe timeout, s.")
    failure_threshold: Count32 = Field(3, ge=1, description="Failures before unready/restart.")


class CapacitySettings(ConfigModel):
    """How many pods each backend runs; see `components.capacity` for the formula."""

    total_replicas: Count32 = Field(
        4, ge=1, description="NVIDIA pods that serve 100% of traffic (the article's 4)."
    )
    headroom: Number = Field(
        1.2, ge=1.0, le=3.0, description="Over-provisioning factor on Ascend's share."
    )
    ascend_capacity_ratio: Number = Field(
        1.0, gt=0, le=10, description="Throughput of one Ascend pod relative to one NVIDIA pod."
    )
    retired_nvidia_replicas: Count32 = Field(
        1, description="NVIDIA pods kept at weight 100 (warm for rollback and checks)."
    )

    @model_validator(mode="after")
    def _replicas_fit_int32(self) -> CapacitySettings:
        # Ascend's pods at weight 100 (the most any ladder step asks); Deployment.spec.replicas
        # is an int32 (k8s.io/api/apps/v1/types.go).
        needed = self.total_replicas * self.headroom / self.ascend_capacity_ratio
        if not needed <= INT32_MAX:
            raise ValueError(
                f"at weight 100 Ascend would need {needed:.3g} pods (totalReplicas "
                f"{self.total_replicas} x headroom {self.headroom:g} / ascendCapacityRatio "
                f"{self.ascend_capacity_ratio:g}), more than a Deployment's replicas allow "
                f"({INT32_MAX}); raise ascendCapacityRatio or lower totalReplicas"
            )
        return self


class IstioSettings(ConfigModel):
    """Names and API version of the Istio objects that split traffic."""

    api_version: Literal["networking.istio.io/v1", "networking.istio.io/v1beta1"] = Field(
        "networking.istio.io/v1", description="v1 is GA since Istio 1.22; v1beta1 for older."
    )
    gateways: tuple[Annotated[str, api_rule(api_rules.gateway_name)], ...] = Field(
        (),
        description="Istio Gateways (`namespace/name`) the VirtualService also binds; empty "
        "means sidecar (mesh) traffic only, as in the article.",
    )
    hosts: tuple[Annotated[str, api_rule(api_rules.hostname)], ...] = Field(
        (), description="Extra hosts the VirtualService answers for (the gateways' hostnames)."
    )
    virtual_service_name: DnsLabel = "inference-vs"
    destination_rule_name: DnsLabel = "inference-dr"


class Settings(ConfigModel):
    """Everything one service of a stack configures: the stack's single service (keys
    `dualstack-inference:<camelCaseKey>`), or one member of a fleet (`services.<name>`, laid
    over the stack's keys by `components.settings.loading.load_fleet`)."""

    _member: str | None = PrivateAttr(None)
    """The member's key under `services`, None for the stack's single implicit service. It is
    not a config key: the loader passes it as the validation context `{"member": name}`."""

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
        None,
        description="Ascend image whose precision check passed (the older, single-image form "
        "of `verifiedImages`; written by `dualstack verify-precision`).",
    )
    verified_images: tuple[VerifiedPair, ...] = Field(
        (),
        description="The verification history: every {nvidia, ascend} image pair whose "
        "precision check passed, oldest first (written by `dualstack verify-precision`).",
    )
    slo: SloSettings = Field(default_factory=SloSettings)
    gate: GateSettings = Field(default_factory=GateSettings)
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
        if problem := rungs.shape_problem(ladder):
            raise ValueError(problem)
        return ladder

    @field_validator("ascend_weight")
    @classmethod
    def _weight_on_ladder(cls, weight: int, info: ValidationInfo) -> int:
        ladder = info.data.get("ladder")
        if ladder is not None and (problem := rungs.step_problem(ladder, weight)):
            raise ValueError(problem)
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

    def model_post_init(self, context: Any, /) -> None:
        """Take the member's name from the validation context while the model is built
        (`Settings.model_validate(raw, context={"member": name})`); the built model is frozen."""
        if isinstance(context, Mapping):
            self._member = context.get("member")

    def hardware(self, kind: Hardware) -> HardwareSettings:
        """The settings of one backend: `settings.hardware("ascend")` is `settings.ascend`."""
        return self.nvidia if kind == "nvidia" else self.ascend

    @property
    def member(self) -> str | None:
        """The fleet member's name (`services.<name>`), None for the single implicit service:
        resource names and the monitoring `service` label exist only for members."""
        return self._member

    @property
    def name(self) -> str:
        """The service's name as the CLI shows it (`--service NAME`): the member's key, or
        `service.name` for the single implicit service."""
        return self._member or self.service.name

    def config_key(self, key: str) -> str:
        """Where this service's `key` lives in the stack config: `key` itself, or
        `services.<name>.<key>` for a fleet member (`pulumi config set --path`)."""
        return f"services.{self._member}.{key}" if self._member else key

    @property
    def weight_key(self) -> str:
        """The config key holding this service's weight: `ascendWeight`, or
        `services.<name>.ascendWeight` for a fleet member (`pulumi config set --path`)."""
        return self.config_key("ascendWeight")

    @property
    def ladder_position(self) -> int:
        """Index of `ascend_weight` in `ladder` (0 = all NVIDIA)."""
        return rungs.position(self.ladder, self.ascend_weight)

    @property
    def next_step(self) -> int | None:
        """The ladder step after the current weight, or None at the top."""
        return rungs.next_rung(self.ladder, self.ascend_weight)

    @property
    def ascend_load_percent(self) -> int:
        """% of requests Ascend handles: its weight, or the mirrored share at weight 0."""
        return max(self.ascend_weight, self.mirror_percent)

    @property
    def verified_facts(self) -> list[dict[str, str]]:
        """The verified pairs as policy config `verifiedImages` (`components.settings.evidence`)."""
        return verified_facts(self.verified_images, self.verified_ascend_image)

    @property
    def ascend_image_verified(self) -> bool:
        """True when this config records the served image pair as precision-verified (its own
        record, whose older `verifiedAscendImage` names the NVIDIA image served here: the judge
        uses the BASE's, see `dualstack.offline.judge`)."""
        nvidia = self.nvidia.image
        return pair_verified(self.verified_facts, nvidia, self.ascend.image, nvidia)
