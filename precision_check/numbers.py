"""One strict reading of the checker's numeric flags (standard library only).

The same rule as the CLI's (`components.settings.scalars`, which the Job cannot import): ASCII
decimal digits only, no `_`, no sign, no leading zero, no surrounding spaces, no exponent,
finite. So `--max-tokens 1_0`, `' 5'`, `+8`, `08`, `٨` (Arabic-Indic eight), `1e2`, `inf`
and `nan`, all of which Python's `int()` or `float()` take, are refused with the reason.
"""

from __future__ import annotations

import argparse
import decimal
import re

_COUNT = re.compile(r"(?:0|[1-9][0-9]*)", re.ASCII)
_AMOUNT = re.compile(r"(?:0|[1-9][0-9]*)(?:\.[0-9]+)?", re.ASCII)
MAX_DIGITS = 18
"""Most digits of a count: every value below 10^18 fits an int64."""
MAX_CHARS = 40
"""Most characters of an amount (digits and the point)."""
SHOWN = 40


def _shown(text: str) -> str:
    return repr(text) if len(text) <= SHOWN else f"{text[:SHOWN]!r}… ({len(text)} characters)"


def parse_count(text: str) -> int:
    """A whole number written in plain decimal digits: `0`, `8`, `64`.

    Raises ValueError (saying what is allowed) for anything else: `08`, `+8`, `-1`, ` 8`,
    `1_0`, `8.0`, `1e2`, non-ASCII digits, more than `MAX_DIGITS` digits.
    """
    if isinstance(text, str) and _COUNT.fullmatch(text) and len(text) <= MAX_DIGITS:
        return int(text)
    raise ValueError(
        f"{_shown(text)}: expected a whole number in decimal digits (e.g. 8), without sign, "
        "leading zero, spaces, '_', fraction or exponent"
    )


def parse_amount(text: str) -> float:
    """A finite number written in plain decimal notation: `0`, `0.5`, `60`, `99.9`.

    Raises ValueError for anything else: `.5`, `5.`, `+1`, `-1`, ` 1`, `1_0`, `1e2`, `inf`,
    `nan`, non-ASCII digits, more than `MAX_CHARS` characters.
    """
    if isinstance(text, str) and _AMOUNT.fullmatch(text) and len(text) <= MAX_CHARS:
        return float(text)
    raise ValueError(
        f"{_shown(text)}: expected a number in plain decimal notation (e.g. 0.5), without "
        "sign, leading zero, spaces, '_', exponent, NaN or infinity"
    )


def plain(value: float) -> str:
    """A finite non-negative float in the notation `parse_amount` reads, exact:
    `1e-05` -> `0.00001`, `60.0` -> `60.0`, `1e+16` -> `10000000000000000`."""
    return format(decimal.Decimal(repr(value)), "f")


def count(text: str) -> int:
    """argparse type: `parse_count`, its reason in argparse's one-line error."""
    try:
        return parse_count(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def amount(text: str) -> float:
    """argparse type: `parse_amount`, its reason in argparse's one-line error."""
    try:
        return parse_amount(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
