"""A small, strict client for Prometheus's instant-query API (stdlib urllib only).

`GET <base>/api/v1/query?query=<PromQL>&time=<unix seconds>` answers
`{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {...},
"value": [<time>, "<number as text>"]}]}}` (prometheus.io/docs/prometheus/latest/querying/api/).
Values come back as text and may be "NaN", "+Inf" or "-Inf"; they are parsed as floats and
left to the caller to judge. Anything else than that shape is an error, never an empty result.

Two error types, so callers can fail closed with the right exit code:
- `PrometheusUnavailable`: no answer at all (connection refused, DNS, timeout).
- `PrometheusError`: an answer that is not a usable result (HTTP error status, malformed
  JSON, `status: error`, a result type other than vector).
"""

from __future__ import annotations

import http.client
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_ANSWER_BYTES = 10 * 1024 * 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class PrometheusError(RuntimeError):
    """Prometheus answered, but not with a usable query result."""


class PrometheusUnavailable(PrometheusError):
    """Prometheus could not be reached or did not answer in time."""


@dataclass(frozen=True)
class Sample:
    """One element of an instant vector: its labels and its value (may be NaN or ±Inf)."""

    labels: Mapping[str, str]
    value: float


def check_url(url: str) -> str:
    """`url` without a trailing slash; raises ValueError unless it is http(s)://host[:port]."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--prometheus {url!r}: expected http(s)://HOST[:PORT][/PATH]")
    return url.rstrip("/")


def promql_string(value: str) -> str:
    """`value` as a double-quoted PromQL string literal (backslash and quote escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def selector(metric: str, labels: Mapping[str, str]) -> str:
    """`metric{a="x",b="y"}` with the labels in the given order, values escaped."""
    matchers = ",".join(f"{key}={promql_string(value)}" for key, value in labels.items())
    return f"{metric}{{{matchers}}}"


def _parse_value(raw: Any) -> float:
    if not isinstance(raw, list) or len(raw) != 2 or not isinstance(raw[1], str):
        raise PrometheusError(f'malformed answer: sample value {raw!r} is not [time, "number"]')
    try:
        return float(raw[1])
    except ValueError:
        raise PrometheusError(
            f"malformed answer: sample value {raw[1]!r} is not a number"
        ) from None


def parse_vector(body: bytes) -> list[Sample]:
    """The samples of an instant-query answer body.

    Raises PrometheusError when the body is not JSON, reports `status: error`, or is not an
    instant vector of `{"metric": {...}, "value": [t, "v"]}` elements.
    """
    try:
        answer = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise PrometheusError("malformed answer: not JSON") from None
    if not isinstance(answer, dict):
        raise PrometheusError("malformed answer: not a JSON object")
    if answer.get("status") != "success":
        cause = answer.get("error") or f"status {answer.get('status')!r}"
        raise PrometheusError(f"query failed: {cause}")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector":
        kind = data.get("resultType") if isinstance(data, dict) else None
        raise PrometheusError(f"malformed answer: result type {kind!r}, expected 'vector'")
    result = data.get("result")
    if not isinstance(result, list):
        raise PrometheusError("malformed answer: `data.result` is not a list")
    samples = []
    for element in result:
        if not isinstance(element, dict) or not isinstance(element.get("metric"), dict):
            raise PrometheusError("malformed answer: vector element without `metric`")
        labels = {str(k): str(v) for k, v in element["metric"].items()}
        samples.append(Sample(labels, _parse_value(element.get("value"))))
    return samples


def describe_value(value: float) -> str:
    """`NaN`, `+Inf`, `-Inf` or the number in general format."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:g}"


class PrometheusClient:
    """Instant queries against one Prometheus at `base_url`, each bounded by `timeout` s.

    Loopback URLs never go through an HTTP proxy from the environment.
    """

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.base_url = check_url(base_url)
        self.timeout = timeout
        host = urllib.parse.urlsplit(self.base_url).hostname
        handlers = [urllib.request.ProxyHandler({})] if host in LOOPBACK_HOSTS else []
        self._opener = urllib.request.build_opener(*handlers)

    def query(self, promql: str, at: float) -> list[Sample]:
        """Evaluate `promql` at unix time `at` (seconds); the instant vector's samples.

        Raises PrometheusUnavailable (no answer within `timeout`) or PrometheusError.
        """
        params = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
        url = f"{self.base_url}/api/v1/query?{params}"
        try:
            with self._opener.open(url, timeout=self.timeout) as answer:
                body = answer.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise PrometheusError(_http_error(exc)) from None
        except TimeoutError:
            cause = f"no answer within {self.timeout:g} s"
            raise PrometheusUnavailable(self._unavailable(cause)) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                cause = f"no answer within {self.timeout:g} s"
            else:
                cause = getattr(reason, "strerror", None) or str(reason)
            raise PrometheusUnavailable(self._unavailable(cause)) from None
        except http.client.HTTPException as exc:
            raise PrometheusError(f"malformed answer: {type(exc).__name__}") from None
        except OSError as exc:
            raise PrometheusUnavailable(self._unavailable(exc.strerror or str(exc))) from None
        if len(body) > MAX_ANSWER_BYTES:
            raise PrometheusError(f"answer larger than {MAX_ANSWER_BYTES} bytes")
        return parse_vector(body)

    def _unavailable(self, cause: str) -> str:
        return f"Prometheus at {self.base_url} is unreachable: {cause.lower()}"


def _http_error(exc: urllib.error.HTTPError) -> str:
    detail = ""
    try:
        answer = json.loads(exc.read(64 * 1024))
        if isinstance(answer, dict) and answer.get("error"):
            detail = f": {answer['error']}"
    except (ValueError, OSError):
        pass
    return f"HTTP {exc.code} {exc.reason}{detail}"
