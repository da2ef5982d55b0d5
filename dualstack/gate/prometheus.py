"""A small, strict client for Prometheus's query API (stdlib urllib and ssl only).

`GET <base>/api/v1/query?query=<PromQL>&time=<unix seconds>` answers
`{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {...},
"value": [<time>, "<number as text>"]}]}}` (prometheus.io/docs/prometheus/latest/querying/api/);
`/api/v1/query_range?query=&start=&end=&step=` answers `resultType: "matrix"` with
`"values": [[<time>, "<number>"], ...]` per series. Values come back as text and may be "NaN",
"+Inf" or "-Inf"; they are parsed as floats and left to the caller to judge. Anything else
than that shape is an error, never an empty result.

Authentication and TLS come from Prometheus's own `http_config` file
(`dualstack.gate.http_config`); a URL with user:password@ is refused (it would show in process
lists and logs). No message carries a header, and every message is redacted.

Two error types, both meaning "could not judge" (exit 2), never a check result:
- `PrometheusUnavailable`: no answer at all (connection refused, DNS, timeout).
- `PrometheusError`: an answer that is not a usable result (HTTP error status, a redirect,
  which the query API never sends but a login proxy does, an HTML page, malformed JSON,
  `status: error`, a result type other than vector). Its message starts with the URL.
"""

from __future__ import annotations

import functools
import http.client
import math
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dualstack.redaction import redact
from precision_check.limits import (
    DeadlineHandler,
    TooLarge,
    bound_socket,
    connection_for,
    loads,
    read_capped,
)

MAX_ANSWER_BYTES = 10 * 1024 * 1024
"""The largest answer read; a larger one is an unusable answer, the rest unread."""
MAX_ERROR_BYTES = 64 * 1024
"""The most of an error answer's body read for its `error` field."""
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class ClientAuth:
    """What the client sends and how it speaks TLS (`dualstack.gate.http_config` resolves it
    from Prometheus's http_config file).

    `headers` holds the credentials: its repr is redacted, and nothing prints it.
    """

    headers: dict[str, str] = field(default_factory=dict, repr=False)
    ssl_context: ssl.SSLContext | None = None
    server_name: str | None = None

    @property
    def has_credentials(self) -> bool:
        """True when an Authorization header is sent."""
        return "Authorization" in self.headers


NO_AUTH = ClientAuth()


class PrometheusError(RuntimeError):
    """Prometheus (or whatever answers at its URL) answered, but not with a usable result."""


class PrometheusUnavailable(PrometheusError):
    """Prometheus could not be reached or did not answer in time."""


@dataclass(frozen=True)
class Sample:
    """One element of an instant vector: its labels and its value (may be NaN or ±Inf)."""

    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class RangeSeries:
    """One series of a range query: its labels and (unix seconds, value) points in time order."""

    labels: Mapping[str, str]
    points: list[tuple[float, float]] = field(default_factory=list)


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
            "would show in process lists and logs); pass the URL without user:password@ and "
            "put them in --prometheus-http-config (basic_auth with password_file)"
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
    data = _success_data(body, "vector")
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


def parse_matrix(body: bytes) -> list[RangeSeries]:
    """The series of a range-query answer body (a matrix), points in time order.

    Raises PrometheusError like `parse_vector` when the body is not a matrix of
    `{"metric": {...}, "values": [[t, "v"], ...]}` elements.
    """
    data = _success_data(body, "matrix")
    result = data.get("result")
    if not isinstance(result, list):
        raise PrometheusError("malformed answer: `data.result` is not a list")
    found = []
    for element in result:
        if not isinstance(element, dict) or not isinstance(element.get("metric"), dict):
            raise PrometheusError("malformed answer: matrix element without `metric`")
        values = element.get("values")
        if not isinstance(values, list):
            raise PrometheusError("malformed answer: matrix element without `values`")
        labels = {str(k): str(v) for k, v in element["metric"].items()}
        points = [(float(raw[0]), _parse_value(raw)) for raw in values if _is_point(raw)]
        if len(points) != len(values):
            raise PrometheusError('malformed answer: a point is not [time, "number"]')
        found.append(RangeSeries(labels, points))
    return found


def _is_point(raw: Any) -> bool:
    return isinstance(raw, list) and len(raw) == 2 and isinstance(raw[0], int | float)


def _success_data(body: bytes, kind: str) -> dict[str, Any]:
    """The `data` of a successful answer whose `resultType` is `kind`."""
    try:
        answer = loads(body)
    except ValueError as exc:  # UnicodeDecodeError and too deep included
        if body.lstrip()[:1] == b"<":
            raise PrometheusError(
                "malformed answer: an HTML page, not JSON (is the URL Prometheus's base URL?)"
            ) from None
        deep = type(exc) is ValueError  # loads' own: nested too deep
        raise PrometheusError(f"malformed answer: not JSON{f' ({exc})' if deep else ''}") from None
    if not isinstance(answer, dict):
        raise PrometheusError("malformed answer: not a JSON object")
    if answer.get("status") != "success":
        cause = answer.get("error") or f"status {answer.get('status')!r}"
        raise PrometheusError(f"query failed: {cause}")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != kind:
        found = data.get("resultType") if isinstance(data, dict) else None
        raise PrometheusError(f"malformed answer: result type {found!r}, expected {kind!r}")
    return data


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


class _HTTPSHandler(urllib.request.HTTPSHandler):
    """HTTPS with the http_config's TLS context, verifying (and sending as SNI) `server_name`
    instead of the URL's host when it is set, as Prometheus's `tls_config.server_name` does."""

    def __init__(self, context: ssl.SSLContext | None, server_name: str | None) -> None:
        super().__init__(context=context)
        self._tls_context = context or ssl.create_default_context()
        self._server_name = server_name

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(self._connection, req), req)

    def _connection(
        self, req: urllib.request.Request, host: str, **kwargs: Any
    ) -> http.client.HTTPSConnection:
        kwargs.pop("context", None)
        connection = connection_for(
            _NamedHTTPSConnection, req, host, context=self._tls_context, **kwargs
        )
        connection.server_name = self._server_name
        return connection


class _NamedHTTPSConnection(http.client.HTTPSConnection):
    server_name: str | None = None
    deadline: float | None = None

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        name = self.server_name or self.host
        self.sock = self._context.wrap_socket(self.sock, server_hostname=name)  # type: ignore[attr-defined]
        self.sock = bound_socket(self.sock, self.deadline)


class PrometheusClient:
    """Queries against one Prometheus at `base_url`, each ending within `timeout` s (the
    connection, the headers and the whole answer: a server that drips cannot stretch it),
    each answer at most `MAX_ANSWER_BYTES` and nested at most 64 deep.

    `auth` (from `--prometheus-http-config`) adds the credentials, tenant headers and TLS
    settings. Loopback URLs never go through an HTTP proxy from the environment; redirects are not
    followed (reported as an unusable answer). Safe to share between threads.
    """

    def __init__(self, base_url: str, timeout: float = 10.0, auth: ClientAuth = NO_AUTH) -> None:
        self.base_url = check_url(base_url)
        self.timeout = timeout
        self._headers = dict(auth.headers)
        parts = urllib.parse.urlsplit(self.base_url)
        handlers: list[urllib.request.BaseHandler] = [_NoRedirects(), DeadlineHandler()]
        if parts.hostname in LOOPBACK_HOSTS:
            handlers.append(urllib.request.ProxyHandler({}))
        if parts.scheme == "https":
            handlers.append(_HTTPSHandler(auth.ssl_context, auth.server_name))
        self._opener = urllib.request.build_opener(*handlers)

    def query(self, promql: str, at: float) -> list[Sample]:
        """Evaluate `promql` at unix time `at` (seconds); the instant vector's samples.

        Raises PrometheusUnavailable (no answer within `timeout`) or PrometheusError (an
        answer that is not an instant vector), each naming the base URL.
        """
        params = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
        body = self._get(f"{self.base_url}/api/v1/query?{params}")
        try:
            return parse_vector(body)
        except PrometheusError as exc:
            raise PrometheusError(self._unusable(str(exc))) from None

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[RangeSeries]:
        """Evaluate `promql` every `step` seconds from `start` to `end` (unix seconds); the
        matrix's series. Raises like `query`."""
        params = urllib.parse.urlencode(
            {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        )
        body = self._get(f"{self.base_url}/api/v1/query_range?{params}")
        try:
            return parse_matrix(body)
        except PrometheusError as exc:
            raise PrometheusError(self._unusable(str(exc))) from None

    def _get(self, url: str) -> bytes:
        request = urllib.request.Request(url, headers=self._headers)
        request.deadline = time.monotonic() + self.timeout  # type: ignore[attr-defined]
        try:
            with self._opener.open(request, timeout=self.timeout) as answer:
                body = read_capped(answer, MAX_ANSWER_BYTES)
        except TooLarge:
            raise PrometheusError(
                self._unusable(f"answer larger than {MAX_ANSWER_BYTES} bytes")
            ) from None
        except urllib.error.HTTPError as exc:
            raise PrometheusError(self._unusable(_http_error(exc))) from None
        except ssl.SSLError as exc:
            raise PrometheusError(self._unusable(_tls_error(exc))) from None
        except TimeoutError:
            cause = f"no answer within {self.timeout:g} s"
            raise PrometheusUnavailable(self._unavailable(cause)) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, ssl.SSLError):
                raise PrometheusError(self._unusable(_tls_error(reason))) from None
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
        return body

    def _unavailable(self, cause: str) -> str:
        return redact(f"Prometheus at {self.base_url} is unreachable: {cause.lower()}")

    def _unusable(self, cause: str) -> str:
        return redact(f"Prometheus at {self.base_url} gave no usable answer: {cause}")


def _tls_error(exc: ssl.SSLError) -> str:
    """`TLS: certificate verify failed: ...`: the handshake failed (tls_config decides)."""
    detail = getattr(exc, "verify_message", None) or exc.reason or str(exc)
    return f"TLS: {' '.join(str(detail).split())} (see tls_config in --prometheus-http-config)"


def _http_error(exc: urllib.error.HTTPError) -> str:
    detail = ""
    try:
        answer = loads(exc.read(MAX_ERROR_BYTES))
        if isinstance(answer, dict) and answer.get("error"):
            detail = ": " + " ".join(str(answer["error"]).split())[:200]
    except (ValueError, OSError, http.client.HTTPException):
        pass
    if 300 <= exc.code < 400:
        where = exc.headers.get("Location") if exc.headers else None
        detail = f" to {where}" if where else ""
        return f"HTTP {exc.code} {exc.reason}: a redirect{detail}, not the query API"
    if exc.code in (401, 403):
        detail += " (credentials: basic_auth or authorization in --prometheus-http-config)"
    return f"HTTP {exc.code} {exc.reason}{detail}"
