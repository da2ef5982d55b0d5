"""The merge-request note against a local stand-in of GitLab's notes API (127.0.0.1)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dualstack.ci.gitlab_note import GitLabNoteError, MergeRequest, find_note, upsert_note
from dualstack.ci.report import MARKER
from dualstack.cli import main

TOKEN = "glpat-test"
NOTES = "/api/v4/projects/group%2Fgitops/merge_requests/7/notes"


class FakeGitLab:
    """Notes of one merge request; records every request. `broken` answers 500 / non-JSON."""

    def __init__(self) -> None:
        self.notes: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str, dict[str, Any] | None]] = []
        self.broken: str | None = None


def handler_for(fake: FakeGitLab) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, code: int, payload: Any) -> None:
            raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            fake.requests.append((self.command, self.path, body))
            if self.headers.get("PRIVATE-TOKEN") != TOKEN:
                return self._answer(401, {"message": "401 Unauthorized"})
            if fake.broken == "500":
                return self._answer(500, {"message": "boom"})
            if fake.broken == "html":
                return self._answer(200, b"<html>sign in</html>")
            path = self.path.split("?")[0]
            if self.command == "GET" and path == NOTES:
                return self._answer(200, list(reversed(fake.notes)))
            if self.command == "POST" and path == NOTES:
                note = {"id": 100 + len(fake.notes), "body": body["body"]}
                fake.notes.append(note)
                return self._answer(201, note)
            if self.command == "PUT" and path.startswith(NOTES + "/"):
                note_id = int(path.rsplit("/", 1)[1])
                for note in fake.notes:
                    if note["id"] == note_id:
                        note["body"] = body["body"]
                        return self._answer(200, note)
            return self._answer(404, {"message": "404 Not found"})

        do_GET = do_POST = do_PUT = _handle

    return Handler


@pytest.fixture
def gitlab() -> Iterator[tuple[FakeGitLab, str]]:
    fake = FakeGitLab()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(fake))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}/api/v4"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def mr(api: str, token: str = TOKEN) -> MergeRequest:
    return MergeRequest(api, "group/gitops", "7", token)


def test_creates_then_updates_the_same_note(gitlab) -> None:
    fake, api = gitlab
    fake.notes.append({"id": 1, "body": "LGTM"})
    assert upsert_note(mr(api), f"{MARKER}\nfirst") == ("created", 101)
    assert upsert_note(mr(api), f"{MARKER}\nsecond") == ("updated", 101)
    assert [n["body"] for n in fake.notes] == ["LGTM", f"{MARKER}\nsecond"]
    assert [r[0] for r in fake.requests] == ["GET", "POST", "GET", "PUT"]


def test_update_only_creates_nothing(gitlab) -> None:
    fake, api = gitlab
    assert upsert_note(mr(api), f"{MARKER}\nno stack", create=False) == ("none", None)
    assert fake.notes == []


@pytest.mark.parametrize(
    ("broken", "token", "message"),
    [
        (None, "wrong", "HTTP 401"),
        ("500", TOKEN, "HTTP 500"),
        ("html", TOKEN, "not JSON"),
    ],
)
def test_api_failures_are_errors(gitlab, broken, token, message) -> None:
    fake, api = gitlab
    fake.broken = broken
    with pytest.raises(GitLabNoteError, match=message):
        upsert_note(mr(api, token), f"{MARKER}\nx")


def test_unreachable_gitlab_is_an_error() -> None:
    # A port nothing listens on: bind, read the port, close.
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = server.server_address[1]
    server.server_close()
    with pytest.raises(GitLabNoteError, match=r"GET http://127\.0\.0\.1"):
        upsert_note(mr(f"http://127.0.0.1:{port}/api/v4"), "x")


def test_find_note_takes_the_newest_marked_note() -> None:
    notes = [
        {"id": 3, "body": f"{MARKER}\nold"},
        {"id": 9, "body": f"{MARKER}\nnew"},
        {"id": 12, "body": f"quoted: {MARKER}"},
        {"id": "x", "body": MARKER},
    ]
    assert find_note(notes) == 9
    with pytest.raises(GitLabNoteError, match="expected a list"):
        find_note({"message": "403 Forbidden"})


def test_cli_posts_with_ci_variables(gitlab, tmp_path: Path, monkeypatch, capsys) -> None:
    fake, api = gitlab
    report = tmp_path / "report.md"
    report.write_text(f"{MARKER}\nreport\n", encoding="utf-8")
    for key, value in {
        "CI_API_V4_URL": api,
        "CI_PROJECT_ID": "group/gitops",
        "CI_MERGE_REQUEST_IID": "7",
        "GITLAB_API_TOKEN": TOKEN,
    }.items():
        monkeypatch.setenv(key, value)
    assert main(["ci", "gitlab-note", str(report)]) == 0
    assert fake.notes == [{"id": 100, "body": f"{MARKER}\nreport\n"}]
    assert "created note 100" in capsys.readouterr().err
    fake.broken = "500"
    assert main(["ci", "gitlab-note", str(report)]) == 2
    assert "HTTP 500" in capsys.readouterr().err


def test_cli_skips_cleanly_without_a_token(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("GITLAB_API_TOKEN", raising=False)
    report = tmp_path / "report.md"
    report.write_text("x", encoding="utf-8")
    assert main(["ci", "gitlab-note", str(report)]) == 0
    assert "GITLAB_API_TOKEN is not set" in capsys.readouterr().err


def test_cli_outside_a_merge_request_pipeline_names_the_unset_variables(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("GITLAB_API_TOKEN", TOKEN)
    monkeypatch.setenv("CI_API_V4_URL", "http://127.0.0.1:9/api/v4")  # never called
    for name in ("CI_PROJECT_ID", "CI_MERGE_REQUEST_IID"):
        monkeypatch.delenv(name, raising=False)
    report = tmp_path / "report.md"
    report.write_text("x", encoding="utf-8")
    assert main(["ci", "gitlab-note", str(report)]) == 2
    assert capsys.readouterr().err == (
        "error: not in a merge-request pipeline: CI_PROJECT_ID, CI_MERGE_REQUEST_IID unset\n"
    )
