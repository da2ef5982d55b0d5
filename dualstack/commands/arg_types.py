"""argparse types for numeric, duration and time flags: one strict rule for all of them.

Numbers follow `components.settings.scalars`: `--to 020`, `--to +20`, `--to " 20 "`,
`--to 2_0` and `--to 20.0` are refused alike (Python's `int()` would take the first four), so
a flag reads a number the way a stack file does; flags take no sign. Durations are one
Prometheus-style sequence of ASCII numbers and units, each unit at most once and in the order
y w d h m s ms (`1h30m`; not `30m30m`, `30m1h`, `３０m` or ` 30m `). Times are unix seconds or
RFC 3339 with a zone (`2024-05-01T12:00:00Z`; not an ISO week date such as
`2024-W18-3T12:00:00Z`, which Python's `fromisoformat` would take). A seconds bound
(`--timeout`) is finite and above 0. Each refusal is argparse's one line with the reason.
Imports nothing heavy, so `dualstack ci` does not pay for the gate or Pulumi.
"""

from __future__ import annotations

import argparse
import math
import re

from components.settings.scalars import parse_int, parse_number, shown

_NUMBER = r"(?:0|[1-9][0-9]*)"
DURATION_UNITS = ("y", "w", "d", "h", "m", "s", "ms")
"""Prometheus's duration units, in the order a duration lists them."""
_DURATION = re.compile("".join(f"(?:{_NUMBER}{unit})?" for unit in DURATION_UNITS))
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"
    r"(?:Z|[+-][0-9]{2}:[0-9]{2})"
)
_UNIX = re.compile(rf"{_NUMBER}(?:\.[0-9]{{1,9}})?")
MAX_SECONDS = 86400.0
"""The largest seconds bound a flag takes (a day): more is a typo, and sockets refuse inf."""


def whole_number(text: str) -> int:
    """A whole number in decimal digits without sign (`0`, `5`); argparse prints the reason."""
    try:
        if text.startswith("-"):
            raise ValueError("expected a whole number without sign (e.g. 2)")
        return parse_int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{shown(text)}: {exc}") from None


def weight(text: str) -> int:
    """A weight in whole percent, 0..100."""
    value = whole_number(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{value} is outside 0..100 (a weight in %)")
    return value


def number(text: str) -> float:
    """A finite number in plain decimal notation (`10`, `0.5`)."""
    try:
        value = float(parse_number(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{shown(text)}: {exc}") from None
    if not math.isfinite(value):  # pragma: no cover - parse_number refuses these
        raise argparse.ArgumentTypeError(f"{shown(text)}: expected a finite number")
    return value


def seconds(text: str) -> float:
    """A time bound in seconds: a finite number above 0, at most `MAX_SECONDS` (`10`,
    `0.5`); `0`, `-1`, `inf`, `nan`, `1e300` are refused."""
    value = number(text)
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{shown(text)}: expected seconds above 0 and at most {MAX_SECONDS:g}"
        )
    return value


def duration(text: str) -> str:
    """A Prometheus-style duration (`30m`, `1h30m`, `90s`), returned as given; refused
    unless it is one non-empty sequence of ASCII numbers (no leading zero) and units, each
    unit at most once and in the order y w d h m s ms."""
    if text and _DURATION.fullmatch(text):
        return text
    raise argparse.ArgumentTypeError(
        f"{shown(text)}: expected a duration such as 30m, 2h or 1h30m (ASCII digits, each unit "
        "of y w d h m s ms once, in that order, no spaces)"
    )


def moment(text: str) -> str:
    """A point in time, returned as given: unix seconds (`1700000000`, `1700000000.5`) or
    RFC 3339 with a zone (`2024-05-01T12:00:00Z`, `2024-05-01T14:00:00+02:00`); the range
    is checked where the time is read (`dualstack.gate.durations.parse_time`)."""
    if _UNIX.fullmatch(text) or _RFC3339.fullmatch(text):
        return text
    raise argparse.ArgumentTypeError(
        f"{shown(text)}: expected unix seconds or RFC 3339 with a zone, e.g. 2024-05-01T12:00:00Z"
    )
