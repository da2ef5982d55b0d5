"""Settings of the precision-check component (stack config key `precisionCheck`)."""

from pydantic import Field

from components.config_model import ConfigModel


class PrecisionCheckSettings(ConfigModel):
    """How the in-cluster precision check compares both backends. Filled in by its component."""

    enabled: bool = Field(True, description="Render the precision-check ConfigMap and Job.")
