"""The Prometheus client against local HTTP servers that misbehave on purpose.

Each server binds 127.0.0.1 on a random port, answers from a fixed table and is shut down
by the fixture; the slow answer is bounded by the client's timeout.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from components.monitoring.promql import quote, selector
from dualstack.gate.prometheus import (
    PrometheusClient,
    PrometheusError,
    PrometheusUnavailable,
    check_url,
    parse_vector,
)


def vector(*values: str) -> dict:
    result = [{"metric": {"hardware": "ascend"}, "value": [1700000000, v]} for v in values]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


ANSWERS: dict[str, tuple[int, bytes]] = {
    "/ok": (200, json.dumps(vector("0.25", "0.5")).encode()),
    "/nan": (200, json.dumps(vector("NaN")).encode()),
    "/empty": (200, json.dumps(vector()).encode()),
    "/garbage": (200, b"<html>proxy error</html>"),
    "/notjson": (200, b"up 1"),
    "/redirect": (302, b""),
    "/error": (200, json.dumps({"status": "error", "error": "bad_data: parse error"}).encode()),
    "/matrix": (
        200,
        json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode(),
    ),
    "/badvalue": (200, json.dumps(vector("fast")).encode()),
    "/nometric": (
        200,
        json.dumps(
            {"status": "success", "data": {"resultType": "vector", "result": [{"value": [1, "1"]}]}}
        ).encode(),
    ),
    "/http500": (500, b"internal"),
    "/http400": (
        400,
        json.dumps({"status": "error", "error": 'invalid parameter "query"'}).encode(),
    ),
}
SLOW_S = 10.0
"""The slow answer is held until the test releases it, at most this long (a safety bound)."""


class Handler(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []
    release: ClassVar[threading.Event] = threading.Event()
    slow_answered: ClassVar[threading.Event] = threading.Event()

    def do_GET(self) -> None:
        Handler.seen.append(self.path)
        prefix = "/" + self.path.split("/")[1]
        if prefix == "/slow":
            Handler.release.wait(SLOW_S)
            Handler.slow_answered.set()
            prefix = "/ok"
        status, body = ANSWERS[prefix]
        try:
            self.send_response(status)
            if status == 302:
                self.send_header("Location", "/login?next=/api/v1/query")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up (timeout test): nothing to answer

    def log_message(self, *args) -> None:
        pass


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # a late answer to a client that timed out must not print into other tests


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_query_sends_promql_and_explicit_time(server):
    samples = PrometheusClient(f"{server}/ok").query('up{job="x"}', 1700000000.5)
    assert [s.value for s in samples] == [0.25, 0.5]
    assert samples[0].labels == {"hardware": "ascend"}
    assert Handler.seen[-1] == "/ok/api/v1/query?query=up%7Bjob%3D%22x%22%7D&time=1700000000.500"


def test_nan_comes_back_as_nan_for_the_caller_to_judge(server):
    (sample,) = PrometheusClient(f"{server}/nan").query("x", 1)
    assert math.isnan(sample.value)


def test_empty_result_is_an_empty_list(server):
    assert PrometheusClient(f"{server}/empty").query("x", 1) == []


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/garbage", "malformed answer: an HTML page, not JSON"),
        ("/notjson", "malformed answer: not JSON"),
        ("/redirect", "HTTP 302 Found: a redirect to /login\\?next=/api/v1/query, not the query"),
        ("/error", "query failed: bad_data: parse error"),
        ("/matrix", "result type 'matrix', expected 'vector'"),
        ("/badvalue", "sample value 'fast' is not a number"),
        ("/nometric", "vector element without `metric`"),
        ("/http500", "HTTP 500"),
        ("/http400", 'HTTP 400 Bad Request: invalid parameter "query"'),
    ],
)
def test_unusable_answers_raise(server, path, message):
    with pytest.raises(PrometheusError, match=message) as caught:
        PrometheusClient(f"{server}{path}").query("x", 1)
    assert not isinstance(caught.value, PrometheusUnavailable)


@contextmanager
def held_answer() -> Iterator[threading.Event]:
    """`/slow` holds its answer until the block ends; yields the event set once it answered."""
    Handler.release.clear()
    Handler.slow_answered.clear()
    try:
        yield Handler.slow_answered
    finally:
        Handler.release.set()


def test_timeout_is_unavailable_and_bounded(server):
    with held_answer() as answered:
        with pytest.raises(PrometheusUnavailable, match=r"unreachable: no answer within 0.3 s"):
            PrometheusClient(f"{server}/slow", timeout=0.3).query("x", 1)
        assert not answered.is_set()  # the client gave up before any answer was sent


def test_refused_connection_is_unavailable():
    from tests.support.prometheus_server import free_port

    with pytest.raises(PrometheusUnavailable, match="connection refused"):
        PrometheusClient(f"http://127.0.0.1:{free_port()}").query("x", 1)


def test_loopback_bypasses_proxy_from_environment(server, monkeypatch):
    # A proxy that would refuse every connection: the query must not go there.
    from tests.support.prometheus_server import free_port

    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{free_port()}")
    assert PrometheusClient(f"{server}/ok").query("x", 1)


@pytest.mark.parametrize("url", ["127.0.0.1:9090", "ftp://x", "http://", "prometheus"])
def test_bad_urls_are_rejected(url):
    with pytest.raises(ValueError, match="expected http"):
        check_url(url)


def test_parse_vector_rejects_non_object():
    with pytest.raises(PrometheusError, match="not a JSON object"):
        parse_vector(b"[1, 2]")


def test_label_values_are_escaped_by_the_one_promql_builder():
    assert quote('a"b\\c') == '"a\\"b\\\\c"'
    assert selector("m", {"ns": "x", "img": 'r/i:"t"'}) == 'm{ns="x", img="r/i:\\"t\\""}'


@pytest.fixture
def project(tmp_path):
    """A project with one stack at 20% Ascend, its image verified."""
    (tmp_path / "Pulumi.yaml").write_text("name: dualstack-inference\nruntime: python\n")
    (tmp_path / "Pulumi.prod.yaml").write_text(
        "config:\n"
        '  dualstack-inference:ascendWeight: "20"\n'
        "  dualstack-inference:verifiedAscendImage: registry/inference-service:v1.2.3-npu\n"
    )
    return tmp_path


@pytest.mark.parametrize(
    ("path", "cause"),
    [
        ("/http500", "gave no usable answer: HTTP 500 Internal Server Error"),
        ("/garbage", "gave no usable answer: malformed answer: an HTML page, not JSON"),
        ("/redirect", "gave no usable answer: HTTP 302 Found: a redirect to /login"),
        ("/matrix", "gave no usable answer: malformed answer: result type 'matrix'"),
    ],
)
def test_gate_on_something_that_is_not_prometheus_is_an_error(server, project, capsys, path, cause):
    from dualstack.cli import main

    argv = ["-C", str(project), "gate", "--stack", "prod", "--prometheus", f"{server}{path}"]
    assert main([*argv, "--at", "1700000000"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no verdict, not even FAILED
    assert captured.err.startswith(f"error: Prometheus at {server}{path} {cause}")
    assert captured.err.count("\n") == 1


def test_promote_against_something_that_is_not_prometheus_changes_nothing(server, project, capsys):
    from dualstack.cli import main

    before = (project / "Pulumi.prod.yaml").read_bytes()
    argv = ["-C", str(project), "promote", "--stack", "prod", "--prometheus", f"{server}/garbage"]
    assert main([*argv, "--at", "1700000000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "an HTML page, not JSON" in err
    assert (project / "Pulumi.prod.yaml").read_bytes() == before


def test_gate_fails_closed_on_nan(server, project, capsys):
    from dualstack.cli import main

    argv = ["-C", str(project), "gate", "--stack", "prod", "--prometheus", f"{server}/nan"]
    assert main([*argv, "--at", "1700000000"]) == 1
    out = capsys.readouterr().out
    assert "PASSED" not in out and "NaN from 0/0" in out
    # Every traffic criterion lacks data; precision alone cannot carry the gate.
    assert out.count("NO_DATA") >= 3


def test_gate_timeout_is_one_line_error(server, project, capsys):
    from dualstack.cli import main

    argv = ["-C", str(project), "gate", "--stack", "prod", "--prometheus", f"{server}/slow"]
    with held_answer():
        assert main([*argv, "--timeout", "0.3"]) == 2
    assert capsys.readouterr().err == (
        f"error: Prometheus at {server}/slow is unreachable: no answer within 0.3 s\n"
    )
