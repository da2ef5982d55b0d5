"""Settings of the traffic routing: which router splits traffic, the shadow rung, tester pins
and how long a rung must bake (stack config keys `router`, `gatewayApi`, `testerPinning`,
`mirrorPercent`, `bakeTime`).

Facts behind them (REFERENCE.md "Gateway API", gateway-api.sigs.k8s.io):
- `router: gateway-api` renders an HTTPRoute (`gateway.networking.k8s.io/v1`). A parentRef to
  a Gateway routes north-south traffic through it; a parentRef to a Service (GAMMA,
  GEP-1426) routes mesh traffic sent to that Service. DestinationRule subsets cannot be named
  from an HTTPRoute, so its backendRefs are the direct per-hardware Services.
- Header names are matched case-insensitively by HTTPRoute, but Istio's VirtualService
  header keys must be lowercase, so a pin header is a lowercase HTTP token (RFC 9110 5.6.2).
- A mirrored request's response is discarded (Envoy `request_mirror_policies`, HTTPRoute
  `RequestMirror`): mirroring shows Ascend production load before it serves anyone.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from components import api_rules
from components.settings.base import ConfigModel, api_rule
from components.settings.scalars import Bool

Router = Literal["istio", "gateway-api"]
"""Which API splits the traffic: Istio VirtualService + DestinationRule, or an HTTPRoute."""

DnsLabel = Annotated[str, api_rule(api_rules.dns1123_label)]
DnsSubdomain = Annotated[str, api_rule(api_rules.dns1123_subdomain)]
# A listener hostname of the Gateway API: RFC 1123, optionally a leading `*.` label.
_HOSTNAME = r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
HeaderName = Annotated[str, Field(pattern=r"^[a-z0-9!#$%&'*+.^_`|~-]+$", max_length=256)]
"""A lowercase HTTP field name (token)."""
HeaderValue = Annotated[str, Field(pattern=r"^[A-Za-z0-9._~-]+$", max_length=256)]
"""A header value that needs no quoting in any router: letters, digits and `._~-`."""
Duration = Annotated[str, Field(pattern=r"^([0-9]+(ms|s|m|h|d|w|y))+$")]
"""A Prometheus duration such as `30m`, `24h` or `1d12h`."""

MAX_BAKE_SECONDS = 30 * 86400
"""The longest bake time: 30 days, within a typical Prometheus retention."""
MIN_BAKE_SECONDS = 5 * 60
"""The shortest bake time but `0s`: 5 minutes. The gate reads the bake window in 60 s steps
(`dualstack.gate.query_texts.STEP_SECONDS`); a shorter window holds too few samples of the recorded
weight to prove the rung held, and under one step its request query has no range at all."""
_DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(text: str) -> float:
    """`1d12h` -> 129600.0: a Prometheus duration (checked by `Duration`) in seconds."""
    return sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION_PART.findall(text))


class GatewayRef(ConfigModel):
    """A Gateway API `Gateway` the HTTPRoute attaches to (a parentRef of kind Gateway)."""

    name: DnsSubdomain = Field(description="Gateway name.")
    namespace: DnsLabel | None = Field(
        None, description="Gateway namespace; default: the stack's namespace."
    )
    section_name: DnsSubdomain | None = Field(
        None, description="Listener to attach to; default: every listener that admits the route."
    )


class GatewayApiSettings(ConfigModel):
    """The HTTPRoute rendered with `router: gateway-api`."""

    route_name: DnsLabel = Field("inference-route", description="HTTPRoute name.")
    mesh: Bool = Field(
        True,
        description="Attach to the shared Service (GAMMA): mesh clients calling it are split. "
        "Needs a mesh that implements GAMMA (Istio sidecars, or a waypoint in ambient mode).",
    )
    gateways: tuple[GatewayRef, ...] = Field(
        (), description="Gateways (north-south entry points) the route also attaches to."
    )
    hostnames: tuple[str, ...] = Field(
        (),
        description="Hostnames matched on the gateways' listeners (Host header); empty: "
        "whatever the listener admits. Ignored for mesh traffic.",
    )

    @model_validator(mode="after")
    def _has_a_parent(self) -> GatewayApiSettings:
        if not self.mesh and not self.gateways:
            raise ValueError(
                "the HTTPRoute needs a parent: set mesh: true (mesh clients) or list gateways"
            )
        bad = [h for h in self.hostnames if not re.match(_HOSTNAME, h) or len(h) > 253]
        if bad:
            raise ValueError(f"hostnames: not RFC 1123 hostnames: {', '.join(bad)}")
        return self


PIN_HEADER_PREFIX = "x-dualstack-"
"""Every tester-pin header starts with it: a header of the project's own, which no client,
SDK or proxy sends on its own (an SDK's `x-stainless-lang`, `user-agent`, `x-forwarded-*`
would route real traffic around the split). An allowlist, not a list of known headers:
`policies/pins.py` holds the same prefix, whatever the owners approved."""


def _project_header(header: str) -> str:
    if header.startswith(PIN_HEADER_PREFIX) and len(header) > len(PIN_HEADER_PREFIX):
        return header
    raise ValueError(
        f"not a project header; a pin header starts with {PIN_HEADER_PREFIX} (e.g. "
        "x-dualstack-hardware), which no client sends on its own"
    )


class TesterPinningSettings(ConfigModel):
    """Requests carrying `header: <value>` go to that hardware whatever the weight: a match
    rule ahead of the weighted route, in either router (smoke tests, precision checks through
    the mesh)."""

    enabled: Bool = Field(True, description="Render the two pin rules.")
    header: Annotated[HeaderName, AfterValidator(_project_header)] = Field(
        "x-dualstack-hardware",
        description="Request header that pins a request (lowercase, starting x-dualstack-).",
    )
    nvidia: HeaderValue = Field("nvidia", description="Header value that pins to NVIDIA.")
    ascend: HeaderValue = Field("ascend", description="Header value that pins to Ascend.")

    @model_validator(mode="after")
    def _distinct_values(self) -> TesterPinningSettings:
        if self.nvidia == self.ascend:
            raise ValueError(f"nvidia and ascend pin the same value {self.ascend!r}")
        return self

    def value(self, hardware: str) -> str:
        """The header value that pins to `hardware` (`nvidia` | `ascend`)."""
        return self.nvidia if hardware == "nvidia" else self.ascend


def mirror_problem(mirror_percent: int, ascend_weight: int | None) -> str | None:
    """Why `mirrorPercent` cannot be used at `ascendWeight`, or None.

    Mirroring is the shadow rung before the first step: allowed only at weight 0, where
    Ascend serves no one and its mirrored responses are discarded.
    """
    if mirror_percent and ascend_weight:
        return (
            f"mirroring is allowed only at ascendWeight 0 (the shadow rung), not at "
            f"{ascend_weight}; set mirrorPercent to 0"
        )
    return None


def _bake_bounded(bake_time: str) -> str:
    seconds = duration_seconds(bake_time)
    if seconds > MAX_BAKE_SECONDS:
        raise ValueError("must be at most 30d (Prometheus must still hold the whole bake window)")
    if 0 < seconds < MIN_BAKE_SECONDS:
        raise ValueError("must be 0s (no bake) or at least 5m (the gate reads it in 60s steps)")
    return bake_time


BakeTime = Annotated[Duration, AfterValidator(_bake_bounded)]
"""`bakeTime`: `0s` (no bake), or a Prometheus duration from 5 minutes to 30 days."""
