"""Prometheus's own HTTP client settings (`http_config`), read from a YAML file.

The same file promtool takes with `--http.config.file` (prometheus/common `HTTPClientConfig`,
REFERENCE.md "Prometheus client conventions"), at its top level:

```yaml
basic_auth: {username: gate, password_file: /run/secrets/prometheus-password}
# or: authorization: {type: Bearer, credentials_file: /run/secrets/token}
# or: bearer_token_file: /run/secrets/token          (the older spelling)
tls_config:
  ca_file: ca.pem            # trust this CA instead of the system's
  cert_file: client.pem      # client certificate (mTLS), with key_file
  key_file: client-key.pem
  server_name: prometheus.monitoring.svc   # verify the certificate for this name (and SNI)
  insecure_skip_verify: false
http_headers:
  X-Scope-OrgID: {values: [team-inference]}  # Mimir, Thanos, Cortex tenants
```

As in Prometheus, relative file names are relative to the file's folder, the content of a
`*_file` is read with surrounding whitespace stripped, and at most one of `basic_auth`,
`authorization` and `bearer_token(_file)` is set. Keys Prometheus has but this client does
not implement (`oauth2`, `proxy_url`, `follow_redirects`, ...) are refused by name rather than
ignored. Credentials are `SecretStr`: they never appear in a message, a repr or a log line.
"""

from __future__ import annotations

import base64
import re
import ssl
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from dualstack.errors import UsageError
from dualstack.gate.prometheus import NO_AUTH, ClientAuth
from precision_check.limits import TooLarge, bounded_yaml_loader, read_regular

OPTION = "--prometheus-http-config"
SECRET_KEYS = frozenset({"password", "credentials", "bearer_token", "secrets"})
"""Keys whose values are never echoed in an error."""
RESERVED_HEADERS = frozenset({"authorization", "host", "content-length", "user-agent"})
"""Headers `http_headers` may not set (Prometheus refuses these too; use `authorization`)."""
MAX_CONFIG_BYTES = 64 * 1024
"""The largest http_config file read."""
MAX_SECRET_BYTES = 64 * 1024
"""The largest `*_file` (a password, a token, a header value) read."""
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP field name (RFC 9110 5.1: a token)."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


def _at_most_one(model: BaseModel, *keys: str) -> None:
    given = [key for key in keys if getattr(model, key) is not None]
    if len(given) > 1:
        raise ValueError(f"at most one of {', '.join(keys)} may be set, got {' and '.join(given)}")


class BasicAuth(_Strict):
    """`basic_auth`: HTTP Basic authentication."""

    username: str = Field(description="user name sent with every query")
    password: SecretStr | None = Field(None, description="the password itself")
    password_file: str | None = Field(None, description="file holding the password")

    @model_validator(mode="after")
    def _one_password(self) -> BasicAuth:
        _at_most_one(self, "password", "password_file")
        return self


class Authorization(_Strict):
    """`authorization`: an `Authorization: <type> <credentials>` header."""

    type: str = Field("Bearer", min_length=1, description="scheme, e.g. Bearer")
    credentials: SecretStr | None = Field(None, description="the token itself")
    credentials_file: str | None = Field(None, description="file holding the token")

    @model_validator(mode="after")
    def _one_credential(self) -> Authorization:
        _at_most_one(self, "credentials", "credentials_file")
        if self.type.lower() == "basic":
            raise ValueError("type Basic is not allowed here: use basic_auth")
        return self


class TLSConfig(_Strict):
    """`tls_config`: how the server is verified and which client certificate is shown."""

    ca_file: str | None = Field(None, description="PEM CA bundle that signs the server")
    cert_file: str | None = Field(None, description="PEM client certificate (with key_file)")
    key_file: str | None = Field(None, description="PEM key of cert_file")
    server_name: str | None = Field(None, description="name to verify and send as SNI")
    insecure_skip_verify: bool = Field(False, description="do not verify the server at all")

    @model_validator(mode="after")
    def _pair(self) -> TLSConfig:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        return self


class Header(_Strict):
    """One `http_headers` entry: values sent as they are, secrets, or read from files."""

    values: list[str] = Field(default_factory=list, description="plain values")
    secrets: list[SecretStr] = Field(default_factory=list, description="values never shown")
    files: list[str] = Field(default_factory=list, description="files holding one value each")


class HTTPConfig(_Strict):
    """The top level of the file: Prometheus's `http_config` keys this client implements."""

    basic_auth: BasicAuth | None = Field(None, description="HTTP Basic authentication")
    authorization: Authorization | None = Field(None, description="Authorization header")
    bearer_token: SecretStr | None = Field(None, description="older spelling: a Bearer token")
    bearer_token_file: str | None = Field(None, description="older spelling: its file")
    tls_config: TLSConfig | None = Field(None, description="TLS verification and client cert")
    http_headers: dict[str, Header] | None = Field(None, description="extra request headers")

    @model_validator(mode="after")
    def _one_auth(self) -> HTTPConfig:
        auths = {
            "basic_auth": self.basic_auth,
            "authorization": self.authorization,
            "bearer_token": self.bearer_token or self.bearer_token_file,
        }
        given = [key for key, value in auths.items() if value is not None]
        if len(given) > 1:
            raise ValueError(f"at most one of basic_auth, authorization, bearer_token: {given}")
        _at_most_one(self, "bearer_token", "bearer_token_file")
        for name in self.http_headers or {}:
            if name.lower() in RESERVED_HEADERS:
                raise ValueError(f"http_headers.{name}: reserved header, not settable here")
        return self


def _problem(error: dict[str, Any]) -> str:
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown key (not part of Prometheus's http_config this client reads)"
    message = error["msg"].removeprefix("Value error, ")
    value = error.get("input")
    leaf = str(error["loc"][-1]) if error["loc"] else ""
    if where and leaf not in SECRET_KEYS and isinstance(value, str | int | float | bool):
        return f"{where} = {value!r}: {message}"
    return f"{where}: {message}" if where else message


def parse_http_config(data: Any, source: str = OPTION) -> HTTPConfig:
    """The validated model of a parsed YAML document (`None` or `{}`: no settings).

    Raises UsageError with one line: `--prometheus-http-config FILE: basic_auth.pasword:
    unknown key ...`, never echoing a credential.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{source}: expected a mapping of http_config keys")
    try:
        return HTTPConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise UsageError(f"{source}: {_problem(first)}") from None


def _read_secret(folder: Path, name: str, key: str, source: str) -> str:
    """The stripped text of a `*_file`; a regular file of at most `MAX_SECRET_BYTES` (a FIFO
    would block, `/dev/zero` never ends). Raises UsageError naming `key` and the file."""
    path = Path(name) if Path(name).is_absolute() else folder / name
    try:
        return read_regular(path, MAX_SECRET_BYTES).decode("utf-8").strip()
    except TooLarge as exc:
        raise UsageError(f"{source}: {key} {path}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or type(exc).__name__
        raise UsageError(f"{source}: {key} {path}: {why}") from None


def _check_header(name: str, value: str, key: str, source: str) -> None:
    """Raise UsageError (naming `key`, never the value) unless `name: value` can be sent: a
    token name, and a value of Latin-1 characters without CR, LF or NUL (RFC 9110 5.5; a
    line break would end the header and start another)."""
    if not _TOKEN.fullmatch(name):
        raise UsageError(f"{source}: http_headers: {name[:60]!r} is not an HTTP header name")
    if any(c in value for c in "\r\n\0"):
        raise UsageError(f"{source}: {key}: the value contains a line break or NUL")
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise UsageError(
            f"{source}: {key}: the value has characters outside Latin-1 (HTTP headers carry "
            "bytes; send ASCII)"
        ) from None


def _path(folder: Path, name: str | None) -> str | None:
    if name is None:
        return None
    return str(Path(name) if Path(name).is_absolute() else folder / name)


def _ssl_context(tls: TLSConfig, folder: Path, source: str) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cafile=_path(folder, tls.ca_file))
        if tls.cert_file is not None:
            context.load_cert_chain(_path(folder, tls.cert_file), _path(folder, tls.key_file))
    except FileNotFoundError as exc:
        raise UsageError(f"{source}: tls_config: {exc.strerror}: {exc.filename}") from None
    except (ssl.SSLError, OSError) as exc:
        raise UsageError(f"{source}: tls_config: not a usable PEM file ({exc})") from None
    if tls.insecure_skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def resolve(config: HTTPConfig, folder: Path, source: str = OPTION) -> ClientAuth:
    """Read the files `config` names (relative to `folder`) into headers and a TLS context.

    Raises UsageError naming the key and file when one cannot be read.
    """
    headers: dict[str, str] = {}
    for name, header in (config.http_headers or {}).items():
        values = [*header.values, *(s.get_secret_value() for s in header.secrets)]
        values += [
            _read_secret(folder, f, f"http_headers.{name}.files", source) for f in header.files
        ]
        if values:
            headers[name] = ", ".join(values)
            _check_header(name, headers[name], f"http_headers.{name}", source)
    if config.basic_auth is not None:
        auth = config.basic_auth
        password = auth.password.get_secret_value() if auth.password else ""
        if auth.password_file is not None:
            password = _read_secret(folder, auth.password_file, "basic_auth.password_file", source)
        token = base64.b64encode(f"{auth.username}:{password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    credentials, scheme = None, "Bearer"
    if config.authorization is not None:
        scheme = config.authorization.type
        if config.authorization.credentials is not None:
            credentials = config.authorization.credentials.get_secret_value()
        elif config.authorization.credentials_file is not None:
            key = "authorization.credentials_file"
            credentials = _read_secret(folder, config.authorization.credentials_file, key, source)
    elif config.bearer_token is not None:
        credentials = config.bearer_token.get_secret_value()
    elif config.bearer_token_file is not None:
        credentials = _read_secret(folder, config.bearer_token_file, "bearer_token_file", source)
    if credentials is not None:
        headers["Authorization"] = f"{scheme} {credentials}"
        key = "authorization" if config.authorization is not None else "bearer_token"
        _check_header("Authorization", headers["Authorization"], key, source)
    tls = config.tls_config
    context = _ssl_context(tls, folder, source) if tls is not None else None
    return ClientAuth(headers, context, tls.server_name if tls is not None else None)


def load_http_config(path: Path | None) -> ClientAuth:
    """The client settings in `path` (Prometheus `http_config` YAML); NO_AUTH for None.

    Raises UsageError (one line, naming the option, the key and the file) when the file is
    missing, not a regular file (a FIFO, a device), above `MAX_CONFIG_BYTES`, not YAML
    (nested more than 64 deep included), not a valid http_config, or sets a header that
    cannot be sent (CR/LF, non-Latin-1).
    """
    if path is None:
        return NO_AUTH
    import yaml

    source = f"{OPTION} {path}"
    try:
        text = read_regular(path, MAX_CONFIG_BYTES).decode("utf-8")
        data = yaml.load(text, Loader=bounded_yaml_loader(yaml))
    except TooLarge as exc:
        raise UsageError(f"{source}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"{source}: {exc.strerror}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        # The parser's message quotes the offending text, which may be a credential.
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UsageError(f"{source}: not YAML{where}") from None
    return resolve(parse_http_config(data, source), path.resolve().parent, source)
