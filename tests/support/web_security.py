"""Throwaway credentials for a Prometheus started with `--web.config.file` (REFERENCE.md,
"Prometheus client conventions"): a CA made in the test, a server certificate it signs, a
client certificate for mutual TLS, and bcrypt hashes for `basic_auth_users`.

    pki = make_pki(tmp_path, server_names=["127.0.0.1", "prometheus.test"])
    web = web_config(tmp_path, users={"gate": "s3cret"}, tls=pki, client_ca=True)

Everything lives in the test's folder and expires in a day; nothing is trusted system-wide.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    """PEM files: the CA, the server's certificate and key, a client's certificate and key."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def _write_cert(cert: x509.Certificate, path: Path) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _alt_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _signed(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    usage: x509.ObjectIdentifier | None = None,
    names: Sequence[str] = (),
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer if issuer is not None else (_name(subject), key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if issuer is None:  # the CA itself
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
        builder = builder.add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), True
        )
    else:
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), False)
    if names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([_alt_name(n) for n in names]), False
        )
    return builder.sign(issuer_key, hashes.SHA256())


def make_pki(folder: Path, server_names: Sequence[str]) -> Pki:
    """A CA, a server certificate for `server_names` (IPs and DNS names) and a client
    certificate, all signed by that CA, as PEM files in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca = _signed("dualstack test CA", ca_key, None)
    server_key, client_key = _key(), _key()
    issuer = (ca.subject, ca_key)
    server = _signed(
        "prometheus", server_key, issuer, ExtendedKeyUsageOID.SERVER_AUTH, server_names
    )
    client = _signed("dualstack-gate", client_key, issuer, ExtendedKeyUsageOID.CLIENT_AUTH)
    return Pki(
        ca=_write_cert(ca, folder / "ca.pem"),
        server_cert=_write_cert(server, folder / "server.pem"),
        server_key=_write_key(server_key, folder / "server-key.pem"),
        client_cert=_write_cert(client, folder / "client.pem"),
        client_key=_write_key(client_key, folder / "client-key.pem"),
    )


def web_config(
    folder: Path,
    users: Mapping[str, str] | None = None,
    tls: Pki | None = None,
    client_ca: bool = False,
) -> Path:
    """Write Prometheus's `--web.config.file`: `basic_auth_users` (bcrypt, cost 4: fast and
    accepted) and `tls_server_config` (with `client_ca: True`, client certificates signed by
    the CA are required). Returns its path."""
    config: dict = {}
    if users:
        config["basic_auth_users"] = {
            name: bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
            for name, password in users.items()
        }
    if tls is not None:
        server = {"cert_file": str(tls.server_cert), "key_file": str(tls.server_key)}
        if client_ca:
            server["client_auth_type"] = "RequireAndVerifyClientCert"
            server["client_ca_file"] = str(tls.ca)
        config["tls_server_config"] = server
    path = folder / "web.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def readiness(
    user: tuple[str, str] | None = None,
    pki: Pki | None = None,
    client_cert: bool = False,
    check_hostname: bool = True,
) -> Callable[[str], bool]:
    """A `ready(url)` for `prometheus_server`: polls `/-/ready` with the credentials and CA
    (`check_hostname=False` for a certificate that does not name 127.0.0.1)."""
    import base64

    context = None
    if pki is not None:
        context = ssl.create_default_context(cafile=str(pki.ca))
        context.check_hostname = check_hostname
        if client_cert:
            context.load_cert_chain(str(pki.client_cert), str(pki.client_key))
    headers = {}
    if user is not None:
        token = base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"

    def ready(url: str) -> bool:
        request = urllib.request.Request(f"{url}/-/ready", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=1.0, context=context) as answer:
                return answer.status == 200
        except (OSError, urllib.error.URLError):
            return False

    return ready
