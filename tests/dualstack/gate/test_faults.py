"""Bad inputs and faults against the gate's Prometheus client, its http_config and its rung,
one table per class of failure (issue 34).

Real local fakes: `tests.support.fault_servers` (a Prometheus that drips, streams forever,
answers huge or deeply nested JSON), FIFOs and devices as files. The classes: hangs (past
the stated bound), tracebacks (anything but the client's own one-line errors), wrong
acceptances (a header that cannot be sent, a rung that cannot be read taken as readable).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
import yaml

from components.monitoring.metric_names import ASCEND_MIRROR, ASCEND_WEIGHT
from components.settings import PROJECT, load_settings
from dualstack.errors import UsageError
from dualstack.gate.http_config import load_http_config
from dualstack.gate.prometheus import PrometheusClient, PrometheusError, Sample
from dualstack.gate.readings import Reading
from dualstack.gate.rung import window_rung
from dualstack.gate.split import split_criterion
from tests.support.fault_servers import (
    FaultServer,
    answer,
    drip,
    drip_headers,
    endless,
    huge,
    silent,
)
from tests.support.param_ids import plain

BOUND = 3.0
"""Seconds a query with `timeout=1` may take, whatever the server does."""
VECTOR = b'{"status": "success", "data": {"resultType": "vector", "result": []}}'


def query(url: str, timeout: float = 1.0):
    return PrometheusClient(url, timeout=timeout).query("up", 1_700_000_000)


# --- hangs: every query ends within its timeout ------------------------------------------

HANGS = {
    "drip-vector-0.1s": drip(VECTOR, 0.1),
    "drip-vector-0.3s-with-length": drip(VECTOR, 0.3, length=len(VECTOR)),
    "drip-spaces-0.5s": drip(b" " * 40 + VECTOR, 0.5),
    "drip-0.9s": drip(b" " * 10 + VECTOR, 0.9),
    "drip-headers-0.1s": drip_headers(0.1),
    "drip-headers-0.6s": drip_headers(0.6),
    "silent": silent(),
}


@pytest.mark.parametrize("script", HANGS.values(), ids=HANGS.keys())
def test_hang_prometheus(script):
    with FaultServer(script) as prometheus:
        started = time.monotonic()
        with pytest.raises(PrometheusError, match="no answer within 1 s"):
            query(prometheus.url)
        assert time.monotonic() - started < BOUND


BIG = {
    "endless-chunked": endless(b" " * 65536),
    "endless-no-length": endless(b" " * 65536, chunked=False),
    "huge-11MiB": huge(11 * 1024 * 1024),
    "huge-50MiB": huge(50 * 1024 * 1024, b"["),
}


@pytest.mark.parametrize("script", BIG.values(), ids=BIG.keys())
def test_hang_unbounded_prometheus_answer(script):
    with FaultServer(script) as prometheus:
        started = time.monotonic()
        with pytest.raises(PrometheusError, match="larger than"):
            query(prometheus.url, timeout=20)
        assert time.monotonic() - started < BOUND


# --- tracebacks: deeply nested or junk answers are the client's one-line errors ----------

DEEP = {
    "arrays-100000": b"[" * 100000 + b"]" * 100000,
    "objects-5000": b'{"a":' * 5000 + b"1" + b"}" * 5000,
    "in-result-3000": b'{"status": "success", "data": {"resultType": "vector", "result": '
    + b"[" * 3000
    + b"]" * 3000
    + b"}}",
    "in-metric-3000": b'{"status": "success", "data": {"resultType": "vector", "result": '
    b'[{"metric": ' + b'{"a":' * 3000 + b"1" + b"}" * 3000 + b', "value": [1, "1"]}]}}',
    "unclosed-300000": b"[" * 300000,
    "in-error-5000": b'{"status": "error", "error": ' + b"[" * 5000 + b"]" * 5000 + b"}",
}


@pytest.mark.parametrize("body", DEEP.values(), ids=DEEP.keys())
def test_traceback_deep_json(body):
    refused = pytest.raises(PrometheusError, match=r"malformed answer|query failed")
    with FaultServer(answer(body)) as prometheus, refused:
        query(prometheus.url)


@pytest.mark.parametrize("status", [400, 422, 500, 503])
@pytest.mark.parametrize(
    "body", [b"[" * 100000, b'{"error": ' + b"[" * 100000 + b"}", b"\xff\xfe", b"NaN"]
)
def test_traceback_deep_error_body(body, status):
    with FaultServer(answer(body, status)) as prometheus, pytest.raises(PrometheusError) as refused:
        query(prometheus.url)
    assert f"HTTP {status}" in str(refused.value)


RETRY_AFTER = ["²", "٣", "-1", "1e9", "inf", "Fri, 31 Dec 1999 23:59:59 GMT", "", "9" * 40]


@pytest.mark.parametrize("value", RETRY_AFTER, ids=plain)
def test_traceback_retry_after(value):
    busy = answer(b'{"status": "error", "error": "busy"}', 503, [("Retry-After", value)])
    with FaultServer(busy) as prometheus:
        started = time.monotonic()
        with pytest.raises(PrometheusError, match="HTTP 503"):
            query(prometheus.url)
        assert time.monotonic() - started < BOUND


# --- wrong acceptances and tracebacks: http_config headers that cannot be sent -----------

BAD_HEADERS = {
    "value-lf": {"http_headers": {"X-Org": {"values": ["a\nX-Evil: 1"]}}},
    "value-cr": {"http_headers": {"X-Org": {"values": ["a\rb"]}}},
    "value-crlf": {"http_headers": {"X-Org": {"values": ["a\r\nb"]}}},
    "value-nul": {"http_headers": {"X-Org": {"values": ["a\0b"]}}},
    "value-cjk": {"http_headers": {"X-Org": {"values": ["团队"]}}},
    "value-euro": {"http_headers": {"X-Org": {"values": ["€"]}}},
    "value-emoji": {"http_headers": {"X-Org": {"values": ["team-🚀"]}}},
    "secret-lf": {"http_headers": {"X-Key": {"secrets": ["k\nX-Evil: 1"]}}},
    "secret-non-latin1": {"http_headers": {"X-Key": {"secrets": ["ключ"]}}},
    "name-space": {"http_headers": {"X Org": {"values": ["a"]}}},
    "name-colon": {"http_headers": {"X-Org:": {"values": ["a"]}}},
    "name-lf": {"http_headers": {"X-Org\nX-Two": {"values": ["a"]}}},
    "name-non-ascii": {"http_headers": {"X-Ørg": {"values": ["a"]}}},
    "authorization-type-crlf": {"authorization": {"type": "Bearer\r\nX-Evil:", "credentials": "t"}},
    "authorization-credentials-lf": {"authorization": {"credentials": "t\nX-Evil: 1"}},
    "authorization-credentials-cjk": {"authorization": {"credentials": "令牌"}},
    "authorization-type-non-latin1": {"authorization": {"type": "Träger€", "credentials": "t"}},
    "bearer-token-cr": {"bearer_token": "t\rX"},
    "bearer-token-non-latin1": {"bearer_token": "тoken"},
}


@pytest.mark.parametrize("config", BAD_HEADERS.values(), ids=BAD_HEADERS.keys())
def test_wrong_acceptance_unsendable_header(tmp_path, config):
    path = tmp_path / "http.yml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    with pytest.raises(UsageError) as refused:
        load_http_config(path)
    assert "\n" not in str(refused.value)
    assert "X-Evil" not in str(refused.value) and "t\n" not in str(refused.value)


def _header_file(text: str):
    def make(tmp_path: Path) -> dict:
        (tmp_path / "value").write_text(text, encoding="utf-8")
        return {"http_headers": {"X-Org": {"files": ["value"]}}}

    return make


def _password_file(text: str):
    def make(tmp_path: Path) -> dict:
        (tmp_path / "token").write_text(text, encoding="utf-8")
        return {"authorization": {"credentials_file": "token"}}

    return make


@pytest.mark.parametrize(
    "make",
    [
        _header_file("line one\nline two"),
        _header_file("café\r\nx"),
        _header_file("团队"),
        _password_file("tok\nen"),
        _password_file("tök€n"),
    ],
    ids=["header-file-lf", "header-file-crlf", "header-file-cjk", "token-lf", "token-euro"],
)
def test_wrong_acceptance_unsendable_header_from_file(tmp_path, make):
    path = tmp_path / "http.yml"
    path.write_text(yaml.safe_dump(make(tmp_path), allow_unicode=True), encoding="utf-8")
    with pytest.raises(UsageError):
        load_http_config(path)


# --- hangs: FIFOs and devices as http_config and its files --------------------------------


def _fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def _config_naming(key: str, target):
    """An http_config whose `key` file is `target(tmp_path)`."""

    def make(tmp_path: Path) -> Path:
        secret = target(tmp_path)
        config = {
            "basic_auth": {"username": "u", "password_file": str(secret)},
            "authorization": {"credentials_file": str(secret)},
            "bearer_token_file": {"bearer_token_file": str(secret)},
            "header_file": {"http_headers": {"X-Org": {"files": [str(secret)]}}},
        }[key]
        path = tmp_path / "http.yml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        return path

    return make


def _big(tmp_path: Path) -> Path:
    path = tmp_path / "big"
    path.write_bytes(b"x" * (200 * 1024))
    return path


CONFIG_FILES = {
    "config-fifo": lambda tmp: _fifo(tmp, "http.yml"),
    "config-dev-zero": lambda _tmp: Path("/dev/zero"),
    "config-dev-urandom": lambda _tmp: Path("/dev/urandom"),
    "config-folder": lambda tmp: tmp,
    "config-200KiB": lambda tmp: _big(tmp),
    "config-deep-yaml": lambda tmp: _write(tmp, "deep.yml", b"[" * 50000 + b"]" * 50000),
    "config-deep-mapping": lambda tmp: _write(
        tmp, "map.yml", "".join("  " * i + "a:\n" for i in range(2000)).encode()
    ),
    **{
        f"{key}-{kind}": _config_naming(key, target)
        for key in ("basic_auth", "authorization", "bearer_token_file", "header_file")
        for kind, target in (
            ("fifo", lambda tmp: _fifo(tmp, "secret")),
            ("dev-zero", lambda _tmp: Path("/dev/zero")),
            ("200KiB", _big),
        )
    },
}


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("make", CONFIG_FILES.values(), ids=CONFIG_FILES.keys())
def test_hang_http_config_file(tmp_path, make):
    """Refused in one UsageError at once: no block on a FIFO, no endless read."""
    path = make(tmp_path)
    outcome: list[object] = []

    def load() -> None:
        try:
            outcome.append(load_http_config(path))
        except BaseException as exc:  # the test reports whatever escaped
            outcome.append(exc)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(timeout=3)
    hung = reader.is_alive()
    for fifo in (tmp_path / "http.yml", tmp_path / "secret"):
        if reader.is_alive() and fifo.is_fifo():
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # release the reader
    assert not hung, "load_http_config hung"
    assert isinstance(outcome[0], UsageError), outcome
    assert "\n" not in str(outcome[0])


# --- wrong acceptances: a recorded rung that is not a 0..1 ratio is never judged ---------

AT = 1_700_000_000.0


class Recorded:
    """Answers the rung's queries: `weight` / `mirror` sample values for their metric."""

    base_url = "http://prometheus.test:9090"

    def __init__(self, weight: list[float], mirror: list[float]) -> None:
        self.weight, self.mirror = weight, mirror

    def query(self, promql: str, at: float) -> list[Sample]:
        values = self.weight if ASCEND_WEIGHT in promql else self.mirror
        assert ASCEND_WEIGHT in promql or ASCEND_MIRROR in promql, promql
        return [Sample({"pod": f"p{i}"}, v) for i, v in enumerate(values)]


NAN, INF = float("nan"), float("inf")
BAD_RUNGS = [
    ([NAN], []),
    ([INF], []),
    ([-INF], []),
    ([20.0], []),  # a percent where a 0..1 ratio is recorded
    ([100.0], []),
    ([1.0001], []),
    ([-0.01], []),
    ([0.2, NAN], []),
    ([0.2], [NAN]),
    ([0.2], [10.0]),
    ([0.0], [INF]),
    ([0.0], [-1.0]),
    ([1e308 * 10], []),
    ([0.2, 50.0], []),
]


@pytest.mark.parametrize(("weight", "mirror"), BAD_RUNGS, ids=str)
def test_wrong_acceptance_unreadable_rung(weight, mirror):
    settings = load_settings({f"{PROJECT}:ascendWeight": "20"})
    rung = window_rung(settings, Recorded(weight, mirror), 3600, AT)
    split = split_criterion(settings, rung, {"ascend": Reading(200.0), "nvidia": Reading(800.0)})
    assert split.status == "NO_DATA", split
    assert "not a 0..1 ratio" in split.detail and split.required
