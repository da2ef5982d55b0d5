"""Secrets never printed: the one redaction the CLI's error printer and the Prometheus
client use (dualstack/redaction.py)."""

from __future__ import annotations

import pytest

from dualstack.cli import printable
from dualstack.gate.prometheus import PrometheusClient, check_url
from dualstack.redaction import redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://user:pw@host:9090/x", "http://***@host:9090/x"),
        ("https://token@prom.example.com", "https://***@prom.example.com"),
        ("Authorization: Bearer abc.def-ghi", "Authorization: Bearer ***"),
        ("Authorization: Basic dXNlcjpwdw==", "Authorization: Basic ***"),
        ("GET /api?query=up&token=abc123&x=1", "GET /api?query=up&token=***&x=1"),
        ("password=hunter2 user=bob", "password=*** user=bob"),
        ('{"api_key": "k-123"}', '{"api_key": "***"}'),
        ("PRIVATE-TOKEN: glpat-abcdefghij0123456789", "PRIVATE-TOKEN: ***"),
        ("pushed to ghp_abcdefghijklmnopqrstuvwxyz012345", "pushed to ***"),
        (
            "a plain message about tokens=5 and max_tokens",
            "a plain message about tokens=5 and max_tokens",
        ),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_the_error_printer_redacts_and_cuts() -> None:
    line = printable("Prometheus at http://u:secret@h is unreachable: " + "x" * 3000)
    assert "secret" not in line
    assert line.startswith("Prometheus at http://***@h is unreachable: ")
    # 43 characters of prefix + 3000, cut at 1000
    assert line.endswith("… (2043 more characters)")


def test_the_prometheus_client_refuses_credentials_in_the_url() -> None:
    with pytest.raises(ValueError) as caught:
        check_url("http://admin:hunter2@127.0.0.1:9090")
    assert "hunter2" not in str(caught.value)
    assert str(caught.value).startswith("--prometheus 'http://***@127.0.0.1:9090': credentials")


def test_the_prometheus_clients_messages_are_redacted() -> None:
    client = PrometheusClient("http://127.0.0.1:9")
    assert client._unavailable("refused token=abc") == (
        "Prometheus at http://127.0.0.1:9 is unreachable: refused token=***"
    )
