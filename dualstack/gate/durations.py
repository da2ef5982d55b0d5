"""The gate's times and durations: `--window`, `--at`, and Prometheus durations (`30s`,
`1h30m`) such as the rules' evaluation interval. Each parser raises ValueError naming the flag
before any query is sent.
"""

from __future__ import annotations

import re
from datetime import datetime

MIN_WINDOW_SECONDS = 5 * 60
"""The recorded series are 5-minute rates: a shorter window judges less than one of them."""
MAX_WINDOW_SECONDS = 7 * 24 * 3600
MAX_UNIX_TIME = 253402300799
"""9999-12-31T23:59:59Z: the last second a report can print as a date (Python datetime)."""
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")


def parse_duration(text: str, option: str = "--window") -> float:
    """A Prometheus duration (`30s`, `30m`, `1h30m`) in seconds.

    Raises ValueError naming `option` when the text is not a duration.
    """
    text = text.strip()
    if not text or _DURATION.sub("", text) != "":
        raise ValueError(f"{option} {text!r}: expected a duration such as 30m, 2h or 1h30m")
    return sum(int(n) * _UNITS[unit] for n, unit in _DURATION.findall(text))


def parse_window(text: str) -> int:
    """A Prometheus duration (`30m`, `1h30m`, `2h`) in whole seconds, 5m..7d.

    Raises ValueError naming `--window` when the text is not a duration or out of range.
    """
    text = text.strip()
    seconds = parse_duration(text, "--window")
    if not MIN_WINDOW_SECONDS <= seconds <= MAX_WINDOW_SECONDS:
        raise ValueError(f"--window {text!r}: must be between 5m and 7d (the series are 5m rates)")
    return int(seconds)


def parse_time(text: str) -> float:
    """`--at`: unix seconds (`1700000000`, digits with an optional fraction) or RFC 3339 with
    a zone (`2023-11-14T22:13:20Z`), up to the year 9999.

    Raises ValueError naming `--at` otherwise, before any query is sent.
    """
    shown = repr(text[:60] + ("…" if len(text) > 60 else ""))
    if re.fullmatch(r"[0-9]{1,20}(\.[0-9]{1,9})?", text):
        value = float(text)
        if not 0 < value <= MAX_UNIX_TIME:
            raise ValueError(
                f"--at {shown}: expected a unix time in seconds from 1 to {MAX_UNIX_TIME} "
                "(9999-12-31T23:59:59Z)"
            )
        return value
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValueError(
            f"--at {shown}: expected unix seconds or RFC 3339 with a zone, e.g. "
            "2024-05-01T12:00:00Z"
        ) from None
    value = moment.timestamp()
    if not 0 < value <= MAX_UNIX_TIME:
        raise ValueError(f"--at {shown}: expected a time after 1970 and before the year 10000")
    return value
