"""The Prometheus client with `--prometheus-http-config` against a REAL Prometheus started
with `--web.config.file`: basic auth, TLS with a throwaway CA, `server_name`, and a client
certificate (mutual TLS). Headers Prometheus does not check (tenant, bearer token) are
checked against a local server that records them. Every server listens on 127.0.0.1, is
bounded in time and stopped by its fixture.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from dualstack.cli import main
from dualstack.errors import UsageError
from dualstack.gate.http_config import load_http_config
from dualstack.gate.prometheus import PrometheusClient, PrometheusError
from tests.dualstack.gate.test_gate_prometheus import END, history, project, write_stack  # noqa: F401
from tests.support.prometheus_server import Series, constant, prometheus_over
from tests.support.web_security import Pki, make_pki, readiness, web_config

START = 1_700_000_000
AT = START + 600
USER, PASSWORD = "gate", "s3cret-Pa55"
DATA = [Series("probe", {"job": "auth"}, constant(42.0, START, AT))]


def http_config(folder: Path, **keys) -> Path:
    path = folder / "http.yml"
    path.write_text(yaml.safe_dump(keys), encoding="utf-8")
    return path


def client_for(url: str, config: Path | None = None) -> PrometheusClient:
    return PrometheusClient(url, timeout=5, auth=load_http_config(config))


def probe(client: PrometheusClient) -> float:
    (sample,) = client.query("probe", AT)
    return sample.value


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), ["127.0.0.1", "prometheus.test"])


@pytest.fixture(scope="module")
def basic_auth_server(tmp_path_factory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("prom-basic")
    web = web_config(folder, users={USER: PASSWORD})
    with prometheus_over(DATA, folder, web, readiness((USER, PASSWORD))) as url:
        yield url


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory, pki) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("prom-tls")
    web = web_config(folder, users={USER: PASSWORD}, tls=pki)
    with prometheus_over(DATA, folder, web, readiness((USER, PASSWORD), pki)) as url:
        yield url


@pytest.fixture(scope="module")
def mtls_server(tmp_path_factory, pki) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("prom-mtls")
    web = web_config(folder, tls=pki, client_ca=True)
    with prometheus_over(DATA, folder, web, readiness(None, pki, client_cert=True)) as url:
        yield url


# --- basic auth -----------------------------------------------------------------------------


def test_basic_auth_with_a_password_file(basic_auth_server, tmp_path):
    (tmp_path / "password").write_text(PASSWORD + "\n")  # trailing newline stripped
    config = http_config(tmp_path, basic_auth={"username": USER, "password_file": "password"})
    assert probe(client_for(basic_auth_server, config)) == 42.0


def test_no_credentials_is_http_401_naming_the_option(basic_auth_server):
    with pytest.raises(PrometheusError) as caught:
        probe(client_for(basic_auth_server))
    assert str(caught.value) == (
        f"Prometheus at {basic_auth_server} gave no usable answer: HTTP 401 Unauthorized "
        "(credentials: basic_auth or authorization in --prometheus-http-config)"
    )


def test_a_wrong_password_is_refused_and_never_printed(basic_auth_server, tmp_path):
    config = http_config(tmp_path, basic_auth={"username": USER, "password": "wrong-Pa55"})
    with pytest.raises(PrometheusError, match="HTTP 401") as caught:
        probe(client_for(basic_auth_server, config))
    assert "wrong-Pa55" not in str(caught.value)


def test_userinfo_in_the_url_is_refused_without_showing_it(basic_auth_server):
    with_userinfo = basic_auth_server.replace("http://", f"http://{USER}:{PASSWORD}@")
    with pytest.raises(ValueError) as caught:
        client_for(with_userinfo)
    message = str(caught.value)
    assert PASSWORD not in message
    assert message.endswith(
        "credentials in the URL are not sent (and would show in process lists and logs); pass "
        "the URL without user:password@ and put them in --prometheus-http-config (basic_auth "
        "with password_file)"
    )


# --- TLS ------------------------------------------------------------------------------------


def test_tls_with_the_throwaway_ca(tls_server, pki, tmp_path):
    config = http_config(
        tmp_path,
        basic_auth={"username": USER, "password": PASSWORD},
        tls_config={"ca_file": str(pki.ca)},
    )
    assert tls_server.startswith("https://127.0.0.1:")
    assert probe(client_for(tls_server, config)) == 42.0


def test_tls_without_the_ca_is_a_verification_error(tls_server):
    with pytest.raises(PrometheusError) as caught:
        probe(client_for(tls_server))
    message = str(caught.value)
    assert message.startswith(f"Prometheus at {tls_server} gave no usable answer: TLS: ")
    assert "certificate verify failed" in message or "unable to get local issuer" in message
    assert message.endswith("(see tls_config in --prometheus-http-config)")


def test_insecure_skip_verify_accepts_an_unknown_ca(tls_server, tmp_path):
    config = http_config(
        tmp_path,
        basic_auth={"username": USER, "password": PASSWORD},
        tls_config={"insecure_skip_verify": True},
    )
    assert probe(client_for(tls_server, config)) == 42.0


def test_server_name_verifies_another_name_than_the_urls(tmp_path_factory, pki, tmp_path):
    """A certificate for `prometheus.test` only, reached at 127.0.0.1: the name check fails
    unless `server_name` says which name to expect (and send as SNI)."""
    folder = tmp_path_factory.mktemp("prom-sni")
    named = make_pki(folder / "pki", ["prometheus.test"])
    web = web_config(folder, tls=named)
    ready = readiness(None, named, check_hostname=False)
    with prometheus_over(DATA, folder, web, ready) as url:
        plain = http_config(tmp_path, tls_config={"ca_file": str(named.ca)})
        with pytest.raises(PrometheusError, match=r"TLS: .*(mismatch|match)"):
            probe(client_for(url, plain))
        (tmp_path / "sni").mkdir()
        config = http_config(
            tmp_path / "sni",
            tls_config={"ca_file": str(named.ca), "server_name": "prometheus.test"},
        )
        assert probe(client_for(url, config)) == 42.0


def test_client_certificate_for_mutual_tls(mtls_server, pki, tmp_path):
    without = http_config(tmp_path, tls_config={"ca_file": str(pki.ca)})
    with pytest.raises(PrometheusError):
        probe(client_for(mtls_server, without))
    (tmp_path / "mtls").mkdir()
    config = http_config(
        tmp_path / "mtls",
        tls_config={
            "ca_file": str(pki.ca),
            "cert_file": str(pki.client_cert),
            "key_file": str(pki.client_key),
        },
    )
    assert probe(client_for(mtls_server, config)) == 42.0


# --- the gate end to end, through TLS and basic auth ----------------------------------------


@pytest.fixture(scope="module")
def secured_gate_data(tmp_path_factory, pki) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("prom-gate")
    web = web_config(folder, users={USER: PASSWORD}, tls=pki)
    with prometheus_over(history(), folder, web, readiness((USER, PASSWORD), pki)) as url:
        yield url


def test_gate_through_tls_and_basic_auth(secured_gate_data, pki, project, tmp_path, capsys):  # noqa: F811
    write_stack(project, "healthy", "healthy")
    (tmp_path / "password").write_text(PASSWORD)
    config = http_config(
        tmp_path,
        basic_auth={"username": USER, "password_file": str(tmp_path / "password")},
        tls_config={"ca_file": str(pki.ca)},
    )
    argv = ["-C", str(project), "gate", "-s", "healthy", "--prometheus", secured_gate_data]
    code = main([*argv, "--at", str(END), "--prometheus-http-config", str(config)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.startswith("Promotion gate for stack healthy (namespace healthy, ")
    assert f"Prometheus {secured_gate_data}" in out.out
    assert PASSWORD not in out.out + out.err


def test_gate_without_the_config_says_what_is_missing(secured_gate_data, project, capsys):  # noqa: F811
    write_stack(project, "healthy", "healthy")
    argv = ["-C", str(project), "gate", "-s", "healthy", "--prometheus", secured_gate_data]
    assert main([*argv, "--at", str(END)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: Prometheus at {secured_gate_data} gave no usable answer: TLS")


# --- headers Prometheus does not check: a recording server ----------------------------------


class Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list] = []  # each request's headers (case-insensitive, as HTTP's are)
    BODY = b'{"status":"success","data":{"resultType":"vector","result":[]}}'

    def do_GET(self) -> None:
        Recorder.seen.append(self.headers)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    Recorder.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_tenant_header_and_bearer_token_file_are_sent(recorder, tmp_path):
    (tmp_path / "token").write_text("tok-123\n")
    (tmp_path / "org").write_text("team-b")
    config = http_config(
        tmp_path,
        authorization={"credentials_file": "token"},
        http_headers={"X-Scope-OrgID": {"values": ["team-a"], "files": ["org"]}},
    )
    assert client_for(recorder, config).query("up", AT) == []
    (headers,) = Recorder.seen
    assert headers["Authorization"] == "Bearer tok-123"
    assert headers["X-Scope-OrgID"] == "team-a, team-b"


def test_the_older_bearer_token_file_spelling(recorder, tmp_path):
    (tmp_path / "token").write_text("tok-456")
    config = http_config(tmp_path, bearer_token_file=str(tmp_path / "token"))
    client_for(recorder, config).query("up", AT)
    assert Recorder.seen[0]["Authorization"] == "Bearer tok-456"


def test_basic_auth_header_is_what_prometheus_expects(recorder, tmp_path):
    config = http_config(tmp_path, basic_auth={"username": "u", "password": "p:w"})
    client_for(recorder, config).query("up", AT)
    token = base64.b64encode(b"u:p:w").decode()
    assert Recorder.seen[0]["Authorization"] == f"Basic {token}"


# --- the file's own validation: one line naming the key, no secret echoed -------------------


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (
            {"basic_auth": {"username": "u", "pasword": "x"}},
            "basic_auth.pasword: unknown key (not part of Prometheus's http_config this client "
            "reads)",
        ),
        ({"oauth2": {"client_id": "x"}}, "oauth2: unknown key"),
        (
            {"basic_auth": {"username": "u", "password": "a", "password_file": "f"}},
            "basic_auth: at most one of password, password_file may be set, got password and "
            "password_file",
        ),
        (
            {"basic_auth": {"username": "u"}, "bearer_token": "t"},
            "at most one of basic_auth, authorization, bearer_token: "
            "['basic_auth', 'bearer_token']",
        ),
        (
            {"authorization": {"type": "Basic", "credentials": "x"}},
            "authorization: type Basic is not allowed here: use basic_auth",
        ),
        ({"tls_config": {"cert_file": "c.pem"}}, "tls_config: cert_file and key_file go together"),
        (
            {"tls_config": {"insecure_skip_verify": "yes"}},
            "tls_config.insecure_skip_verify = 'yes': Input should be a valid boolean",
        ),
        ({"basic_auth": {"username": "u", "password": 12345}}, "basic_auth.password: Input"),
        (
            {"http_headers": {"Authorization": {"values": ["x"]}}},
            "http_headers.Authorization: reserved header, not settable here",
        ),
    ],
)
def test_bad_files_are_one_line_naming_the_key(tmp_path, keys, message):
    path = http_config(tmp_path, **keys)
    with pytest.raises(UsageError) as caught:
        load_http_config(path)
    text = str(caught.value)
    assert text.startswith(f"--prometheus-http-config {path}: {message}")
    assert "\n" not in text and "12345" not in text


def test_a_missing_password_file_names_key_and_file(tmp_path):
    path = http_config(tmp_path, basic_auth={"username": "u", "password_file": "nope"})
    with pytest.raises(UsageError) as caught:
        load_http_config(path)
    assert str(caught.value) == (
        f"--prometheus-http-config {path}: basic_auth.password_file {tmp_path / 'nope'}: "
        "No such file or directory"
    )


def test_yaml_errors_do_not_quote_the_file(tmp_path):
    path = tmp_path / "http.yml"
    path.write_text("basic_auth: {username: u, password: 'hunter2\n")
    with pytest.raises(UsageError) as caught:
        load_http_config(path)
    assert "hunter2" not in str(caught.value)
    assert str(caught.value).startswith(f"--prometheus-http-config {path}: not YAML")


def test_the_repr_of_resolved_settings_hides_the_credentials(tmp_path):
    path = http_config(tmp_path, basic_auth={"username": "u", "password": "hunter2"})
    auth = load_http_config(path)
    assert auth.has_credentials
    assert "hunter2" not in repr(auth) and "Authorization" not in repr(auth)
