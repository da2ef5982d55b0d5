"""Settings of the unified monitoring component (stack config key `monitoring`)."""

from pydantic import Field

from components.config_model import ConfigModel


class MonitoringSettings(ConfigModel):
    """Which Prometheus rules and dashboard to render. Filled in by the monitoring component."""

    enabled: bool = Field(True, description="Render the PrometheusRule and Grafana dashboard.")
