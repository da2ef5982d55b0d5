"""Settings of the unified monitoring component (stack config key `monitoring`).

Defaults are the exporters' own metric and label names (REFERENCE.md "Exporter metric names"):
NVIDIA dcgm-exporter, Huawei npu-exporter (mind-cluster), Istio standard telemetry and the seed
article's application metrics. When Prometheus scrapes an exporter through a ServiceMonitor
without `honorLabels`, the exporter's `namespace` label arrives as `exported_namespace`: set
`namespaceLabel` accordingly.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from components import api_rules
from components.settings.base import ConfigModel, api_rule, label_map
from components.settings.scalars import Bool, Number

MetricName = Annotated[str, Field(pattern=r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")]
"""A Prometheus metric name (prometheus.io/docs/concepts/data_model)."""
LabelName = Annotated[str, Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")]
"""A Prometheus label name."""
PromDuration = Annotated[str, Field(pattern=r"^([0-9]+(ms|s|m|h|d|w|y))+$")]
"""A Prometheus duration such as `30s`, `5m` or `1h30m`."""
Price = Annotated[Number, Field(gt=0)]

DCGM_INT32_BLANK = 2147483632.0
"""0x7ffffff0: the smallest of DCGM's "blank" sentinels (INT32 blank; the INT64 blank is
0x7ffffffffffffff0 ~ 9.22e18 and the FP64 blank 2**47), from NVIDIA's `dcgm_structs.h`."""


class DcgmExporterSettings(ConfigModel):
    """NVIDIA dcgm-exporter metric and label names (its default counters file)."""

    utilization: MetricName = Field("DCGM_FI_DEV_GPU_UTIL", description="GPU utilisation, %.")
    memory_used: MetricName = Field("DCGM_FI_DEV_FB_USED", description="Framebuffer used, MiB.")
    memory_free: MetricName = Field(
        "DCGM_FI_DEV_FB_FREE",
        description="Framebuffer free, MiB (there is no default FB_TOTAL: total = used + free).",
    )
    temperature: MetricName = Field("DCGM_FI_DEV_GPU_TEMP", description="GPU temperature, °C.")
    power: MetricName = Field("DCGM_FI_DEV_POWER_USAGE", description="Power draw, W.")
    namespace_label: LabelName = Field(
        "namespace", description="Label naming the namespace of the pod a GPU is assigned to."
    )
    model_label: LabelName = Field("modelName", description="Label carrying the GPU model.")
    pod_label: LabelName = Field(
        "pod",
        description="Label naming the pod a GPU is assigned to (a fleet's series are split "
        "by service on it).",
    )
    blank_floor: Number = Field(
        DCGM_INT32_BLANK,
        gt=0,
        description="Values at or above this are DCGM 'blank'/unsupported sentinels and dropped.",
    )


class NpuExporterSettings(ConfigModel):
    """Huawei npu-exporter metric and label names, chip level and container level.

    `level` picks where utilisation and memory come from; temperature, power, health and the
    chip count (accelerator-hours, cost) are chip-level metrics at either level.
    """

    level: Literal["chip", "container"] = Field(
        "chip", description="Utilisation and memory from `npu_chip_info_*` or `container_npu_*`."
    )
    chip_utilization: MetricName = "npu_chip_info_utilization"
    chip_memory_used: MetricName = Field(
        "npu_chip_info_hbm_used_memory", description="HBM used, MB (910 series)."
    )
    chip_memory_total: MetricName = Field(
        "npu_chip_info_hbm_total_memory", description="HBM total, MB (910 series)."
    )
    container_utilization: MetricName = "container_npu_utilization"
    container_memory_used: MetricName = "container_npu_used_memory"
    container_memory_total: MetricName = "container_npu_total_memory"
    temperature: MetricName = Field("npu_chip_info_temperature", description="Chip °C.")
    power: MetricName = Field("npu_chip_info_power", description="Chip power, W.")
    health: MetricName = Field(
        "npu_chip_info_health_status", description="Chip health: 1 healthy, 0 unhealthy."
    )
    namespace_label: LabelName = Field(
        "namespace", description="Label naming the namespace of the pod using a chip."
    )
    model_label: LabelName = Field("model_name", description="Label carrying the chip model.")
    pod_label: LabelName = Field(
        "pod_name",
        description="Label naming the pod using a chip (a fleet's series are split by service "
        "on it).",
    )
    chip_label: LabelName = Field("id", description="Label carrying the chip number.")

    @property
    def utilization(self) -> str:
        """The utilisation metric (%) at the configured level."""
        return self.chip_utilization if self.level == "chip" else self.container_utilization

    @property
    def memory(self) -> tuple[str, str]:
        """(used, total) memory metrics at the configured level (same unit, MB)."""
        if self.level == "chip":
            return self.chip_memory_used, self.chip_memory_total
        return self.container_memory_used, self.container_memory_total


class IstioTelemetrySettings(ConfigModel):
    """Istio standard metrics; a workload (Deployment) name maps to its hardware."""

    requests: MetricName = "istio_requests_total"
    duration_bucket: MetricName = Field(
        "istio_request_duration_milliseconds_bucket",
        description="Request duration histogram buckets in MILLISECONDS (converted to s).",
    )
    reporter: Literal["destination", "source"] = Field(
        "destination",
        description="Which proxy's report to count; `destination` counts each request once.",
    )
    workload_label: LabelName = "destination_workload"
    namespace_label: LabelName = "destination_workload_namespace"
    status_label: LabelName = "response_code"


class AppMetricsSettings(ConfigModel):
    """The application's own metrics (the seed article's), with a hardware label per pod."""

    requests: MetricName = "http_requests_total"
    duration_bucket: MetricName = Field(
        "http_request_duration_seconds_bucket",
        description="Request duration histogram buckets in seconds.",
    )
    hardware_label: LabelName = Field(
        "hardware", description="Label with `nvidia` | `ascend` (the pods' label, scraped)."
    )
    namespace_label: LabelName = "namespace"
    service_label: LabelName | None = Field(
        "app", description="Label equal to the service name; null to not filter on it."
    )
    status_label: LabelName = Field("status", description="HTTP status code label.")


class AlertSettings(ConfigModel):
    """How long a condition must hold before an alert fires, and its severity."""

    duration: PromDuration = Field(description="The rule's `for:`.")
    severity: Literal["critical", "warning", "info"]


class AlertsSettings(ConfigModel):
    """One entry per alerting rule; thresholds come from the `slo` key."""

    ascend_error_ratio: AlertSettings = AlertSettings(duration="5m", severity="critical")
    ascend_latency: AlertSettings = AlertSettings(duration="10m", severity="warning")
    precision_check_failed: AlertSettings = AlertSettings(duration="0s", severity="critical")
    ascend_no_traffic: AlertSettings = AlertSettings(duration="10m", severity="critical")
    npu_chip_unhealthy: AlertSettings = AlertSettings(duration="5m", severity="warning")
    accelerator_unpriced: AlertSettings = AlertSettings(duration="1h", severity="info")
    runbook_url: str | None = Field(
        None, description="URL of the team's migration SOPs, added as `runbook_url`."
    )


class PriceSettings(ConfigModel):
    """Price of one accelerator-hour per accelerator model, as the exporter names the model
    (DCGM `modelName`, e.g. `NVIDIA A100-SXM4-80GB`; npu-exporter `model_name`)."""

    nvidia: dict[str, Price] = Field(default_factory=dict)
    ascend: dict[str, Price] = Field(default_factory=dict)
    currency: str = Field("USD", min_length=1, max_length=8, description="Dashboard unit.")


class DashboardSettings(ConfigModel):
    """The Grafana dashboard ConfigMap, found by the Grafana sidecar through its label."""

    enabled: Bool = True
    namespace: str | None = Field(
        None,
        pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="Namespace the sidecar watches; default: the stack's namespace.",
    )
    label: Annotated[LabelName, api_rule(api_rules.qualified_name)] = Field(
        "grafana_dashboard", description="Label the sidecar selects on (a Kubernetes label key)."
    )
    label_value: Annotated[str, api_rule(api_rules.label_value)] = "1"
    folder: str | None = Field(None, description="Grafana folder (`grafana_folder` annotation).")


class MonitoringSettings(ConfigModel):
    """Which Prometheus rules and Grafana dashboard to render (`components.monitoring`)."""

    enabled: Bool = Field(True, description="Render the PrometheusRule and Grafana dashboard.")
    request_source: Literal["istio", "app"] = Field(
        "istio", description="Request metrics from Istio telemetry or the app's own metrics."
    )
    istio: IstioTelemetrySettings = Field(default_factory=IstioTelemetrySettings)
    app: AppMetricsSettings = Field(default_factory=AppMetricsSettings)
    dcgm: DcgmExporterSettings = Field(default_factory=DcgmExporterSettings)
    npu: NpuExporterSettings = Field(default_factory=NpuExporterSettings)
    prices: PriceSettings = Field(default_factory=PriceSettings)
    evaluation_interval: PromDuration = Field("30s", description="Rule group interval.")
    alerts: AlertsSettings = Field(default_factory=AlertsSettings)
    rule_labels: Annotated[dict[str, str], label_map()] = Field(
        default_factory=dict,
        description="Labels of the PrometheusRule object (the Prometheus ruleSelector, e.g. "
        "`release: kube-prometheus-stack`).",
    )
    dashboard: DashboardSettings = Field(default_factory=DashboardSettings)
