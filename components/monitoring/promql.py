"""Small PromQL text builders shared by the rules, the dashboard and the gate (pure functions).

Quoting follows the PromQL lexer: double-quoted strings with Go escapes
(prometheus.io/docs/prometheus/latest/querying/basics/#string-literals).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

Matcher = tuple[str, str, str]
"""(label, operator, value); operator one of `=`, `!=`, `=~`, `!~`."""

_OPERATORS = ("=", "!=", "=~", "!~")


def quote(value: str) -> str:
    """A PromQL string literal: `inference` -> `"inference"` (quotes and backslashes escaped)."""
    return json.dumps(value, ensure_ascii=False)


def number(value: float) -> str:
    """A PromQL number without a spurious `.0`: 2147483632.0 -> `2147483632`, 0.05 -> `0.05`."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def selector(metric: str, matchers: Mapping[str, str] | Iterable[Matcher] = ()) -> str:
    """An instant-vector selector: selector("up", {"job": "x"}) -> `up{job="x"}`.

    `matchers` is a mapping (equality) or (label, op, value) triples; the same label may appear
    more than once (`model!="a", model!="b"`). Raises ValueError on an unknown operator.
    """
    triples = (
        [(k, "=", v) for k, v in matchers.items()] if isinstance(matchers, Mapping) else matchers
    )
    parts = []
    for label, op, value in triples:
        if op not in _OPERATORS:
            raise ValueError(f"unknown matcher operator {op!r} for label {label!r}")
        parts.append(f"{label}{op}{quote(value)}")
    return f"{metric}{{{', '.join(parts)}}}" if parts else metric


def over_time(
    function: str, expression: str, range_seconds: int, step_seconds: int | None = None
) -> str:
    """A range function over the last `range_seconds` of `expression`:
    over_time("avg_over_time", "x", 600) -> `avg_over_time(x[600s])`; with `step_seconds` the
    range is a subquery evaluating `expression` every step: `avg_over_time(x[600s:60s])`
    (prometheus.io/docs/prometheus/latest/querying/basics/#subquery)."""
    step = f":{step_seconds}s" if step_seconds is not None else ""
    return f"{function}({expression}[{range_seconds}s{step}])"
