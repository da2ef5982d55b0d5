"""Tester pins: the one kind of route the Ascend share leaves out, recognised precisely.

The program renders, ahead of the weighted split, one rule per backend that sends requests
carrying the header `testerPinning.header` with that backend's value (`x-dualstack-hardware:
ascend`) to that backend whatever the weight: testers reach one backend through the real
route. Such a rule sends 100% of ITS requests to Ascend, which the worst-case share would read
as "Ascend at 100%". So a rule is a pin, and left out of the share, only when all of this holds:

- it is an HTTP rule whose match is exactly one header condition: VirtualService
  `match: [{headers: {<header>: {exact: <value>}}}]`, HTTPRoute
  `matches: [{headers: [{name: <header>, value: <value>, type: Exact}]}]` (a path of
  PathPrefix `/`, the default, may be given), nothing else (no other header, no query, no
  method, no regex, no prefix): each router's `pin_value` (`policies.routers`);
- `<header>` is the configured one (the HTTPRoute compares names case-insensitively, as the
  Gateway API does; Istio keys are lowercase) and `<value>` the configured value of one
  hardware;
- the rule has exactly one destination, reaching only that hardware's pods (Ascend pins: only
  Ascend workloads; NVIDIA pins: no Ascend workload), with nothing else on the rule (no
  mirror, rewrite, redirect, filter, fault, timeout);
- config `testerPinning` names the header and values. `dualstack policy-config` takes them
  from the BASE stack config, so a change cannot declare its own catch-all a pin.

Anything else, including a header route that almost matches, is judged as the route it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from policies.common import DEFAULT_PINNING, ConfigError, config_value
from policies.routers import reader

PIN_HEADER_PREFIX = "x-dualstack-"
"""Every pin header starts with it (`components.settings.routing.PIN_HEADER_PREFIX`, kept
equal by a test): a header of the project's own. Whatever the owners approved, a pin on a
header clients send on their own (an SDK's `x-stainless-lang`) would route real traffic
around the split, so such a config is refused, not judged."""


def config_pinning(config: Mapping[str, Any]) -> dict[str, str]:
    """Config `testerPinning` as {header, nvidia, ascend}. Raises ConfigError unless each is a
    non-empty string, the header one of the project's (`PIN_HEADER_PREFIX`, any case: the
    HTTPRoute compares names case-insensitively) and the two values differ."""
    raw = config_value(config, "testerPinning", DEFAULT_PINNING)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"testerPinning = {raw!r} is not a mapping of header, nvidia, ascend")
    found = {key: raw.get(key, DEFAULT_PINNING[key]) for key in DEFAULT_PINNING}
    if not all(isinstance(v, str) and v for v in found.values()):
        raise ConfigError(f"testerPinning = {dict(raw)!r}: header, nvidia, ascend must be text")
    header = found["header"]
    if not header.lower().startswith(PIN_HEADER_PREFIX) or len(header) == len(PIN_HEADER_PREFIX):
        raise ConfigError(
            f"testerPinning.header = {header!r} is not a project header: a pin header starts "
            f"with {PIN_HEADER_PREFIX} (e.g. x-dualstack-hardware), which no client sends on its "
            "own"
        )
    if found["nvidia"] == found["ascend"]:
        raise ConfigError(f"testerPinning: nvidia and ascend are both {found['ascend']!r}")
    return found


def pinned_hardware(kind: str, entry: Mapping[str, Any], pinning: Mapping[str, str]) -> str | None:
    """`nvidia` / `ascend` when the route entry (`kind` VirtualService: an `http` entry;
    HTTPRoute: a rule) has the shape of a pin for that hardware's value; None otherwise. The
    caller still checks where its one destination goes. The shape is each router's
    (`pin_value` of `policies.routers`)."""
    value = reader(kind).pin_value(entry, pinning["header"])
    for hardware in ("nvidia", "ascend"):
        if value is not None and value == pinning[hardware]:
            return hardware
    return None


def reaches_only(hardware: str, workload_urns: Sequence[str], ascend_urns: frozenset[str]) -> bool:
    """True when a pin's destination reaches some pods, all of `hardware`: all Ascend for an
    Ascend pin, none Ascend for an NVIDIA pin."""
    if not workload_urns:
        return False
    ascend = [urn in ascend_urns for urn in workload_urns]
    return all(ascend) if hardware == "ascend" else not any(ascend)
