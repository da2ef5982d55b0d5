"""A local stand-in for GitLab's approvals API (127.0.0.1), for `dualstack ci owner-approval`.

Answers `GET /api/v4/projects/:id/merge_requests/:iid/approvals` as GitLab does (`approved`,
`approvals_required`, `approvals_left`, `approved_by`; a project requiring no approvals says
`approved: true` with `approvals_required: 0`, `required`) and
`GET /api/v4/projects/:id/repository/commits/:sha/merge_requests` with the merged merge
request of a commit, and takes the report note (`.../merge_requests/:iid/notes`, listed
empty, created with id 1); everything else is 404. Requests without the token get 401.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "glpat-approvals"
PROJECT = "group/gitops"


@dataclass
class Approvals:
    """Merge request iid -> approved; iid -> approvals the project requires (default 1);
    commit sha -> merged merge request iid."""

    approved: dict[str, bool] = field(default_factory=dict)
    required: dict[str, int] = field(default_factory=dict)
    merged_by: dict[str, str] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    url: str = ""


_APPROVALS = re.compile(
    r"^/api/v4/projects/(?P<project>[^/]+)/merge_requests/(?P<iid>\d+)/approvals$"
)
_COMMIT = re.compile(
    r"^/api/v4/projects/(?P<project>[^/]+)/repository/commits/(?P<sha>\w+)/merge_requests$"
)


def _approvals(state: Approvals, iid: str) -> dict[str, Any]:
    """GitLab's answer: with no approval required, `approved` is true and nobody approved."""
    required = state.required.get(iid, 1)
    given = required if state.approved[iid] else 0
    return {
        "iid": int(iid),
        "approved": given >= required,
        "approvals_required": required,
        "approvals_left": required - given,
        "approved_by": [{"user": {"username": f"owner{n}"}} for n in range(given)],
    }


def _handler(state: Approvals) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, code: int, payload: Any) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            state.requests.append(self.path)
            if self.headers.get("PRIVATE-TOKEN") != TOKEN:
                return self._answer(401, {"message": "401 Unauthorized"})
            if (match := _APPROVALS.match(self.path)) and match["iid"] in state.approved:
                return self._answer(200, _approvals(state, match["iid"]))
            if match := _COMMIT.match(self.path):
                iid = state.merged_by.get(match["sha"])
                found = [{"iid": int(iid), "state": "merged"}] if iid else []
                return self._answer(200, [{"iid": 99, "state": "closed"}, *found])
            if self.path.split("?")[0].endswith("/notes"):
                return self._answer(200, [])
            return self._answer(404, {"message": "404 Not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            state.requests.append(f"POST {self.path}")
            if self.headers.get("PRIVATE-TOKEN") != TOKEN:
                return self._answer(401, {"message": "401 Unauthorized"})
            if self.path.endswith("/notes"):
                return self._answer(201, {"id": 1})
            return self._answer(404, {"message": "404 Not found"})

    return Handler


@contextmanager
def gitlab_approvals(state: Approvals | None = None) -> Iterator[Approvals]:
    """Serve `state` on 127.0.0.1 (an ephemeral port) until the block ends; `state.url` is the
    `CI_API_V4_URL` to use."""
    state = state or Approvals()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/api/v4"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
