"""Secrets never printed: one redaction of URL userinfo, tokens and passwords in any text.

Used by the checker's summary and errors, the CLI's error printer (`dualstack.cli`) and the
Prometheus client's messages, so a `--prometheus http://user:pw@host`, a `?token=...` or a
token a backend echoes in its error body never reaches a terminal or a CI log. Standard
library only (the checker's Job runs it); `dualstack.redaction` is this module.

- URL userinfo: `https://user:pw@host/` -> `https://***@host/`;
- `key=value` / `key: value` where the key names a secret (token, password, secret, api key,
  authorization, ...): the value becomes `***`;
- `Bearer <token>` / `Basic <credentials>`: the credentials become `***`;
- well-known token shapes (GitLab `glpat-`, GitHub `ghp_` / `github_pat_`).
"""

from __future__ import annotations

import re

MASK = "***"

_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@?#]+@")
_SECRET_KEY = (
    r"(?:access[_-]?token|auth[_-]?token|private[_-]?token|refresh[_-]?token|token|"
    r"password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|apikey|authorization)"
)
_KEY_VALUE = re.compile(
    rf"(?i)(?P<key>\b{_SECRET_KEY})(?P<sep>[\"']?\s*[=:]\s*[\"']?)(?!\s*(?:bearer|basic)\s)"
    r"(?P<value>[^\s&\"',;)]+)"
)
_SCHEME_CREDENTIALS = re.compile(r"(?i)\b(?P<scheme>bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
_TOKEN_SHAPES = re.compile(
    r"\b(?:glpat-[A-Za-z0-9_-]{10,}|ghp_[A-Za-z0-9]{20,}|github_pat_\w{20,})"
)


def redact(text: str) -> str:
    """`text` with every credential replaced by `***` (see the module docstring)."""
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _SCHEME_CREDENTIALS.sub(lambda m: f"{m['scheme']} {MASK}", text)
    text = _KEY_VALUE.sub(lambda m: f"{m['key']}{m['sep']}{MASK}", text)
    return _TOKEN_SHAPES.sub(MASK, text)
