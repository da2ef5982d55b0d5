"""The break-glass patch both routers write (`patch`, `kubectl_patch` of
`components.routers.istio` and `gateway_api`): pure, the same rule for either object.

A JSON patch (RFC 6902) is applied all or nothing: when a `test` op fails the API server
changes nothing (Kubernetes `--type json`), so each weight it sets is guarded by a test that
the backend at that place is still the one the split names.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from components.settings import HARDWARE, Hardware


def weight_patch(
    backends: str, guard: str, expected: Mapping[Hardware, str], weights: Mapping[str, int]
) -> list[dict[str, Any]]:
    """The JSON patch setting the split's weights: `backends` is the JSON pointer of its list
    of backends (`/spec/http/2/route`), one per hardware in `HARDWARE` order. First a `test`
    per backend that `<backends>/<i>/<guard>` still holds `expected[hw]`, then a `replace` of
    each `<backends>/<i>/weight` with `weights[hw]` (in %)."""
    tests = [
        {"op": "test", "path": f"{backends}/{i}/{guard}", "value": expected[hw]}
        for i, hw in enumerate(HARDWARE)
    ]
    sets = [
        {"op": "replace", "path": f"{backends}/{i}/weight", "value": weights[hw]}
        for i, hw in enumerate(HARDWARE)
    ]
    return tests + sets


def kubectl_patch_command(
    namespace: str, resource: str, name: str, patch: list[dict[str, Any]]
) -> str:
    """`kubectl -n NAMESPACE patch RESOURCE NAME --type json -p '<patch>'`, the patch as compact
    JSON quoted for a POSIX shell (`resource`: `virtualservices.networking.istio.io`)."""
    text = json.dumps(patch, separators=(",", ":"))
    return f"kubectl -n {namespace} patch {resource} {name} --type json -p {shlex.quote(text)}"
