"""A small, strict client for Prometheus's instant-query API (stdlib urllib only).

`GET <base>/api/v1/query?query=<PromQL>&time=<unix seconds>` answers
`{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {...},
"value": [<time>, "<number as text>"]}]}}` (prometheus.io/docs/prometheus/latest/querying/api/).
Values come back as text and may be "NaN", "+Inf" or "-Inf"; they are parsed as floats and
left to the caller to judge. Anything else than that shape is an error, never an empty result.

Two error types, both meaning "could not judge" (exit 2), never a check result:
- `PrometheusUnavailable`: no answer at all (connection refused, DNS, timeout).
- `PrometheusError`: an answer that is not a usable result (HTTP error status, a redirect,
  which the query API never sends but a login proxy does, an HTML page, malformed JSON,
  `status: error`, a result type other than vector). Its message starts with the URL.
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

from dualstack.redaction import redact

MAX_ANSWER_BYTES = 10 * 1024 * 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class PrometheusError(RuntimeError):
    """Prometheus (or whatever answers at its URL) answered, but not with a usable result."""


class PrometheusUnavailable(PrometheusError):
    """Prometheus could not be reached or did not answer in time."""


@dataclass(frozen=True)
class Sample:
    """One element of an instant vector: its labels and its value (may be NaN or ±Inf)."""

    labels: Mapping[str, str]
    value: float


def check_url(url: str) -> str:
    """`url` without a trailing slash; raises ValueError unless it is http(s)://host[:port],
    with no userinfo (`user:pw@`). The message shows the URL redacted."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"--prometheus {redact(url)[:200]!r}: expected http(s)://HOST[:PORT][/PATH]"
        )
    if "@" in parts.netloc:
        raise ValueError(
            f"--prometheus {redact(url)[:200]!r}: credentials in the URL are not sent (and "
            "would show in process lists and logs); pass the URL without user:password@"
        )
    return url.rstrip("/")


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
        if body.lstrip()[:1] == b"<":
            raise PrometheusError(
                "malformed answer: an HTML page, not JSON (is the URL Prometheus's base URL?)"
            ) from None
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


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Turn every 3xx into an HTTPError: the query API never redirects, a login proxy does."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class PrometheusClient:
    """Instant queries against one Prometheus at `base_url`, each bounded by `timeout` s.

    Loopback URLs never go through an HTTP proxy from the environment; redirects are not
    followed (reported as an unusable answer).
    """

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.base_url = check_url(base_url)
        self.timeout = timeout
        host = urllib.parse.urlsplit(self.base_url).hostname
        handlers: list[urllib.request.BaseHandler] = [_NoRedirects()]
        if host in LOOPBACK_HOSTS:
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    def query(self, promql: str, at: float) -> list[Sample]:
        """Evaluate `promql` at unix time `at` (seconds); the instant vector's samples.

        Raises PrometheusUnavailable (no answer within `timeout`) or PrometheusError (an
        answer that is not an instant vector), each naming the base URL.
        """
        params = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
        url = f"{self.base_url}/api/v1/query?{params}"
        try:
            with self._opener.open(url, timeout=self.timeout) as answer:
                body = answer.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise PrometheusError(self._unusable(_http_error(exc))) from None
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
            cause = f"malformed answer: {type(exc).__name__}"
            raise PrometheusError(self._unusable(cause)) from None
        except OSError as exc:
            raise PrometheusUnavailable(self._unavailable(exc.strerror or str(exc))) from None
        if len(body) > MAX_ANSWER_BYTES:
            raise PrometheusError(self._unusable(f"answer larger than {MAX_ANSWER_BYTES} bytes"))
        try:
            return parse_vector(body)
        except PrometheusError as exc:
            raise PrometheusError(self._unusable(str(exc))) from None

    def _unavailable(self, cause: str) -> str:
        return redact(f"Prometheus at {self.base_url} is unreachable: {cause.lower()}")

    def _unusable(self, cause: str) -> str:
        return redact(f"Prometheus at {self.base_url} gave no usable answer: {cause}")


def _http_error(exc: urllib.error.HTTPError) -> str:
    detail = ""
    try:
        answer = json.loads(exc.read(64 * 1024))
        if isinstance(answer, dict) and answer.get("error"):
            detail = ": " + " ".join(str(answer["error"]).split())
    except (ValueError, OSError):
        pass
    if 300 <= exc.code < 400:
        where = exc.headers.get("Location") if exc.headers else None
        detail = f" to {where}" if where else ""
        return f"HTTP {exc.code} {exc.reason}: a redirect{detail}, not the query API"
    return f"HTTP {exc.code} {exc.reason}{detail}"
