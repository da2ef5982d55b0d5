"""The stack's settings as one package; `components.settings` keeps every public name.

- `model`: the `Settings` tree of one service and `SettingsError` (one line per bad key);
- `loading`: the entry points `load_fleet()` and `load_settings()`, from a stack's config to
  validated settings, and the rendering of every validation error;
- `fleet`: the services of a stack (`services`): `Fleet`, what a member may set and inherits;
- `names`: the names a service's objects take from its Service name;
- `base`: `ConfigModel`, the frozen, `extra="forbid"`, camelCase base of every model;
- `images`: image references (`repository[:tag][@sha256:digest]`);
- one module per area: `slo`, `monitoring`, `precision`, `policy`.
"""

from components.settings.fleet import Fleet
from components.settings.images import parse_image
from components.settings.loading import config_with_weights, load_fleet, load_settings
from components.settings.model import (
    HARDWARE,
    PROJECT,
    TOTAL_WEIGHT,
    AscendSettings,
    CapacitySettings,
    DnsLabel,
    Hardware,
    HardwareSettings,
    Image,
    IstioSettings,
    NvidiaSettings,
    Percent,
    PoolSettings,
    ProbeSettings,
    ResourceSettings,
    ServiceSettings,
    Settings,
    SettingsError,
    TaintSettings,
)

__all__ = [
    "HARDWARE",
    "PROJECT",
    "TOTAL_WEIGHT",
    "AscendSettings",
    "CapacitySettings",
    "DnsLabel",
    "Fleet",
    "Hardware",
    "HardwareSettings",
    "Image",
    "IstioSettings",
    "NvidiaSettings",
    "Percent",
    "PoolSettings",
    "ProbeSettings",
    "ResourceSettings",
    "ServiceSettings",
    "Settings",
    "SettingsError",
    "TaintSettings",
    "config_with_weights",
    "load_fleet",
    "load_settings",
    "parse_image",
]
