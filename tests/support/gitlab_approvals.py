"""A local stand-in for GitLab's approvals API (127.0.0.1), for `dualstack ci owner-approval`.

Answers `GET /api/v4/projects/:id/merge_requests/:iid/approval_state` as GitLab does (the
owners' rule with `approvals_required`, `approved`, `approved_by`, a project requiring no
approvals answering `approved: true` with nobody, `required`; and the judge's own rule), and
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
    merge_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The judge project's view: iid -> {"sha", "target_branch", "state"}."""
    artifacts: dict[str, bytes] = field(default_factory=dict)
    """Head sha -> the zip its merge-request pipeline's head-render job uploaded."""
    verdicts: list[tuple[str, str, str]] = field(default_factory=list)
    """(iid, "approve" | "unapprove", sha) the judge posted."""


_APPROVALS = re.compile(
    r"^/api/v4/projects/(?P<project>[^/]+)/merge_requests/(?P<iid>\d+)/approval_state$"
)
_MR = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)/merge_requests/(?P<iid>\d+)$")
_MR_PIPELINES = re.compile(r"^/api/v4/projects/[^/]+/merge_requests/(?P<iid>\d+)/pipelines$")
_JOBS = re.compile(r"^/api/v4/projects/[^/]+/pipelines/(?P<pipeline>\d+)/jobs")
_ARTIFACTS = re.compile(r"^/api/v4/projects/[^/]+/jobs/(?P<job>\d+)/artifacts$")
_VERDICT = re.compile(r"^/api/v4/projects/[^/]+/merge_requests/(?P<iid>\d+)/(?P<verb>un)?approve$")
_COMMIT = re.compile(
    r"^/api/v4/projects/(?P<project>[^/]+)/repository/commits/(?P<sha>\w+)/merge_requests$"
)


def _approval_state(state: Approvals, iid: str) -> dict[str, Any]:
    """GitLab's answer: the owners' code-owner rule (with no approval required it is approved
    and nobody approved) and the judge's rule, not yet approved."""
    required = state.required.get(iid, 1)
    given = required if state.approved[iid] else 0
    owners = {
        "name": "owners",
        "rule_type": "code_owner",
        "approvals_required": required,
        "approved": given >= required,
        "approved_by": [{"username": f"owner{n}"} for n in range(given)],
    }
    judge = {
        "name": "dualstack judge",
        "rule_type": "regular",
        "approvals_required": 1,
        "approved": False,
        "approved_by": [],
    }
    return {"approval_rules_overwritten": False, "rules": [owners, judge]}


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
            if (match := _MR.match(self.path)) and match["iid"] in state.merge_requests:
                return self._answer(
                    200, {"iid": int(match["iid"]), **state.merge_requests[match["iid"]]}
                )
            if match := _MR_PIPELINES.match(self.path):
                sha = state.merge_requests.get(match["iid"], {}).get("sha")
                return self._answer(200, [{"id": 5, "sha": "f" * 40}, {"id": 9, "sha": sha}])
            if match := _JOBS.match(self.path):
                jobs = [{"id": 90, "name": "unit-tests", "status": "success"}]
                if match["pipeline"] == "9":
                    jobs.append({"id": 91, "name": "head-render", "status": "success"})
                return self._answer(200, jobs)
            if match := _ARTIFACTS.match(self.path):
                sha = next(iter(state.merge_requests.values()), {}).get("sha")
                if match["job"] != "91" or sha not in state.artifacts:
                    return self._answer(404, {"message": "404 Not found"})
                raw = state.artifacts[sha]
                self.send_response(200)
                self.send_header("Content-Type", "application/zip")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                return None
            if (match := _APPROVALS.match(self.path)) and match["iid"] in state.approved:
                return self._answer(200, _approval_state(state, match["iid"]))
            if match := _COMMIT.match(self.path):
                iid = state.merged_by.get(match["sha"])
                found = [{"iid": int(iid), "state": "merged"}] if iid else []
                return self._answer(200, [{"iid": 99, "state": "closed"}, *found])
            if self.path.split("?")[0].endswith("/notes"):
                return self._answer(200, [])
            return self._answer(404, {"message": "404 Not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append(f"POST {self.path}")
            if self.headers.get("PRIVATE-TOKEN") != TOKEN:
                return self._answer(401, {"message": "401 Unauthorized"})
            if match := _VERDICT.match(self.path):
                verb = "unapprove" if match["verb"] else "approve"
                state.verdicts.append((match["iid"], verb, body.get("sha", "")))
                return self._answer(201, {})
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
