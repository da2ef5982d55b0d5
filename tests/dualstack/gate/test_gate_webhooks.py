"""`gate.webhooks`: pre-step checks the gate calls (Flagger's pre-rollout webhooks), each a
required criterion `webhook:<name>`, against a real Prometheus and a real HTTP server on
127.0.0.1 that answers as the test says: a 2xx passes; an error status, a redirect, no answer
within the timeout or a refused connection fails (fail closed).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import jsonschema
import pytest

from components.settings import SettingsError, load_settings
from dualstack.cli import main
from tests.conftest import REPO, cfg
from tests.dualstack.gate.test_gate_prometheus import gate, prometheus, write_stack  # noqa: F401
from tests.dualstack.gate.test_gate_prometheus import project as gate_project  # noqa: F401
from tests.support.prometheus_server import free_port


class _Hooks(BaseHTTPRequestHandler):
    """`/ok` 200, `/broken` 500 with a reason, `/moved` 302, `/slow` answers after 3 s."""

    calls: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        _Hooks.calls.append({"path": self.path, "body": json.loads(self.rfile.read(length))})
        if self.path == "/slow":
            time.sleep(3)
        status, text = {
            "/ok": (200, "smoke passed: 40/40 requests"),
            "/broken": (500, "load test: p99 2.4 s over the 1 s budget\ndetails..."),
            "/moved": (302, ""),
            "/slow": (200, "late"),
        }[self.path]
        data = text.encode()
        try:
            self.send_response(status)
            if status == 302:
                self.send_header("Location", "http://example.com/")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the gate gave up on /slow
            pass

    def log_message(self, *_args) -> None:
        pass


@pytest.fixture
def hooks():
    """The webhook server's base URL; stopped by the test."""
    _Hooks.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hooks)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def site(gate_project, prometheus):  # noqa: F811
    """(the project folder, the module's Prometheus URL) of test_gate_prometheus."""
    return gate_project, prometheus


def with_hooks(root, *hooks: dict) -> None:
    write_stack(root, "healthy", "healthy", gate=json.dumps({"webhooks": list(hooks)}))


def details(out: str) -> dict[str, str]:
    """{`Webhook <name>`: "STATUS: detail"} from the report's detail lines."""
    found = (re.match(r"^(Webhook [a-z0-9-]+): (.*)$", line) for line in out.splitlines())
    return {m.group(1): m.group(2) for m in found if m}


def test_a_webhook_answering_2xx_passes_and_receives_the_step(site, hooks, capsys):
    with_hooks(site[0], {"name": "smoke", "url": f"{hooks}/ok", "metadata": {"suite": "ascend"}})
    assert gate(*site, "healthy", "-o", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads((REPO / "docs/schemas/dualstack-gate-v1.json").read_text()))
    (stack,) = doc["stacks"]
    hook = next(c for c in stack["criteria"] if c["key"] == "webhook:smoke")
    assert (hook["status"], hook["required"], hook["ascend"]) == ("PASS", True, "HTTP 200")
    assert hook["detail"] == f"HTTP 200 from {hooks}/ok: smoke passed: 40/40 requests"
    (call,) = _Hooks.calls
    assert call["body"] == {
        "name": "smoke",
        "stack": "healthy",
        "service": None,
        "namespace": "healthy",
        "phase": "pre-step",
        "step": {"from": 20, "to": 50},
        "metadata": {"suite": "ascend"},
    }


def test_every_other_answer_fails_the_gate(site, hooks, capsys):
    refused = f"http://127.0.0.1:{free_port()}/x"
    with_hooks(
        site[0],
        {"name": "load", "url": f"{hooks}/broken"},
        {"name": "moved", "url": f"{hooks}/moved"},
        {"name": "slow", "url": f"{hooks}/slow", "timeout": "1s"},
        {"name": "gone", "url": refused},
    )
    started = time.monotonic()
    assert gate(*site, "healthy") == 1
    assert time.monotonic() - started < 20  # bounded by each webhook's timeout
    out = capsys.readouterr().out
    found = details(out)
    assert found["Webhook load"] == (
        f"FAIL: HTTP 500 from {hooks}/broken: load test: p99 2.4 s over the 1 s budget"
    )
    assert found["Webhook moved"] == (
        f"FAIL: HTTP 302 from {hooks}/moved: redirects are not followed (fail closed)"
    )
    assert found["Webhook slow"] == f"FAIL: no answer from {hooks}/slow within 1s (fail closed)"
    assert found["Webhook gone"].startswith(f"FAIL: {refused} unreachable: ")
    assert found["Webhook gone"].endswith("(fail closed)")
    assert "FAILED" in out


def test_a_webhook_url_with_a_token_is_shown_redacted(site, hooks, capsys):
    with_hooks(site[0], {"name": "smoke", "url": f"{hooks}/broken?token=s3cret"})
    assert gate(*site, "healthy") == 1
    out = capsys.readouterr().out
    assert "s3cret" not in out and "token=***" in out


@pytest.mark.parametrize(
    ("hooks_config", "message"),
    [
        ([{"name": "a", "url": "ftp://x"}], "must be an http:// or https:// URL with a host"),
        ([{"name": "a", "url": "https://u:p@x"}], "must not carry user:password@"),
        ([{"name": "a", "url": "https://x", "timeout": "10m"}], "at most 5m"),
        ([{"name": "a", "url": "https://x"}, {"name": "a", "url": "https://y"}], "a repeated"),
        ([{"name": "Not_A_Label", "url": "https://x"}], "gate.webhooks.0.name"),
    ],
)
def test_bad_webhooks_are_refused_naming_the_key(hooks_config, message):
    with pytest.raises(SettingsError, match="dualstack-inference:gate") as caught:
        load_settings(cfg(ascendWeight="20", gate={"webhooks": hooks_config}))
    assert message in str(caught.value)


def test_adding_a_webhook_is_an_envelope_change(git_repo, capsys):
    """A webhook changes what judges a step: the owners approve it (safety-envelope-unchanged
    fails without them), like any other change of the gate's settings."""
    with (git_repo / "Pulumi.prod.yaml").open("a", encoding="utf-8") as stack_file:
        stack_file.write(
            "  dualstack-inference:gate:\n"
            "    webhooks: [{name: smoke, url: 'https://smoke.example.com/run'}]\n"
        )
    code = main(["-C", str(git_repo), "preview", "-s", "prod", "--base", "main"])
    out = capsys.readouterr().out
    assert code == 1
    assert "Safety envelope: 1 change, needs the owners' approval\n  gate.webhooks: [] -> [{" in out
    assert "  FAIL safety-envelope-unchanged [mandatory]: gate.webhooks: [] -> [{" in out
