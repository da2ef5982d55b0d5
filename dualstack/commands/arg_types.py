"""argparse types for numeric flags, under the one strict rule of `components.settings.scalars`.

`--to 020`, `--to +20`, `--to " 20 "`, `--to 2_0` and `--to 20.0` are refused alike (Python's
`int()` would take the first four), so a flag reads a number the way a stack file does.
Imports nothing heavy, so `dualstack ci` does not pay for the gate or Pulumi.
"""

from __future__ import annotations

import argparse
import math

from components.settings.scalars import parse_int, parse_number, shown


def whole_number(text: str) -> int:
    """A whole number in decimal digits (`5`, `-1`); argparse prints the reason."""
    try:
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
