"""Which server a backend URL reaches: for refusing a check of a backend against itself.

Two URLs name the same server when their schemes and ports agree, their paths agree after
normalisation, and their hosts resolve to a common address. Text alone is not enough: the
resolver reads `127.1`, `0x7f000001`, `2130706433` and `127.000.000.001` as 127.0.0.1
(inet_aton(3)), `[::ffff:127.0.0.1]` is that address mapped into IPv6, and a connection to
`0.0.0.0` or `[::]` reaches the local host, as every loopback address does.
"""

from __future__ import annotations

import contextvars
import ipaddress
import posixpath
import socket
import urllib.parse

DEFAULT_PORTS = {"http": 80, "https": 443}
LOCAL = "127.0.0.1"
"""How every address of the local host is shown: loopback (127.0.0.0/8, ::1) and
unspecified (0.0.0.0, ::) alike."""


RESOLVE: contextvars.ContextVar[bool] = contextvars.ContextVar("resolve", default=True)
"""Whether `addresses` asks the resolver. Set False only where the hosts can only be compared
as text: a stack's render, whose cluster-local Service names resolve in the cluster alone (the
Job's own run, in the cluster, compares them again)."""


def _address(text: str) -> str:
    """One resolved address, IPv4-mapped IPv6 as IPv4 and the local host as `LOCAL`."""
    address = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return LOCAL if address.is_loopback or address.is_unspecified else str(address)


def addresses(host: str, port: int) -> frozenset[str]:
    """The addresses `host` resolves to (see `_address`); `{host}` lower-cased when it does
    not resolve (the request will then fail on its own), or when `RESOLVE` is off."""
    if not RESOLVE.get():
        return frozenset({host.lower().rstrip(".")})
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        return frozenset({host.lower().rstrip(".")})
    return frozenset(_address(info[4][0]) for info in found)


def _path(path: str) -> str:
    """The path with `%xx` decoded, `//` and `.`/`..` resolved, and every trailing `/v1`
    removed (the check appends the OpenAI path after one `/v1` either way)."""
    path = posixpath.normpath("/" + urllib.parse.unquote(path).lstrip("/")).rstrip("/")
    while path.endswith("/v1"):
        path = path.removesuffix("/v1")
    return path


def server_of(url: str) -> str | None:
    """The server a backend URL names, as text for messages: lower-case scheme and host,
    `localhost` as 127.0.0.1, the port made explicit, no trailing `/` or `/v1`.
    `HTTP://localhost/v1/` -> `http://127.0.0.1:80`. None when `url` is not an http(s) URL
    with a host and a valid port."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a port that is not a number in 0..65535
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    host = LOCAL if parts.hostname in ("localhost", "::1") else parts.hostname
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}:{port}{_path(parts.path)}"


def same_server(a: str, b: str) -> bool:
    """True when two valid backend URLs (`server_of` is not None) reach the same server:
    same scheme, port and normalised path, and a common resolved address."""
    pa, pb = urllib.parse.urlsplit(a), urllib.parse.urlsplit(b)
    port_a = pa.port or DEFAULT_PORTS[pa.scheme]
    port_b = pb.port or DEFAULT_PORTS[pb.scheme]
    if (pa.scheme, port_a, _path(pa.path)) != (pb.scheme, port_b, _path(pb.path)):
        return False
    return bool(addresses(pa.hostname or "", port_a) & addresses(pb.hostname or "", port_b))
