"""Post the pull-request report as a GitLab merge-request note, updating it in place.

GitLab REST API v4 (docs.gitlab.com/api/notes): `GET /projects/:id/merge_requests/:iid/notes`
lists notes, `POST` creates one, `PUT .../notes/:note_id` edits one; the token goes in the
`PRIVATE-TOKEN` header. The job token cannot write notes, so the pipeline passes a project
access token with `api` scope. Standard library only.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from dualstack.ci.report import MARKER

TIMEOUT_SECONDS = 15.0
"""Per-request timeout."""


class GitLabNoteError(RuntimeError):
    """The GitLab API refused or did not answer (HTTP error, timeout, malformed JSON)."""


@dataclass(frozen=True)
class MergeRequest:
    """Where the note goes: `api_url` is `$CI_API_V4_URL`, e.g. https://gitlab.example/api/v4."""

    api_url: str
    project_id: str
    iid: str
    token: str

    def notes_url(self, note_id: int | None = None) -> str:
        project = urllib.parse.quote(self.project_id, safe="")
        url = f"{self.api_url.rstrip('/')}/projects/{project}/merge_requests/{self.iid}/notes"
        return url if note_id is None else f"{url}/{note_id}"


def api_call(method: str, url: str, token: str, body: dict[str, Any] | None = None) -> Any:
    """One GitLab API call with `PRIVATE-TOKEN`; the decoded JSON answer.

    Raises GitLabNoteError on an HTTP error, no answer within `TIMEOUT_SECONDS`, or non-JSON.
    """
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("PRIVATE-TOKEN", token)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raise GitLabNoteError(f"{method} {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise GitLabNoteError(f"{method} {url}: {reason}") from None
    try:
        return json.loads(raw)
    except ValueError:
        raise GitLabNoteError(f"{method} {url}: the answer is not JSON") from None


def find_note(notes: Any, marker: str = MARKER) -> int | None:
    """Id of the newest note whose body starts with `marker`; None when there is none.

    `notes`: the API's list of {"id": int, "body": str, ...}. Raises GitLabNoteError when it
    is not such a list.
    """
    if not isinstance(notes, list):
        raise GitLabNoteError(f"expected a list of notes, got {type(notes).__name__}")
    ids = [
        note["id"]
        for note in notes
        if isinstance(note, dict)
        and isinstance(note.get("id"), int)
        and str(note.get("body", "")).startswith(marker)
    ]
    return max(ids, default=None)


def upsert_note(mr: MergeRequest, body: str, create: bool = True) -> tuple[str, int | None]:
    """Edit the report note of the merge request, or create it (unless `create` is False).

    Returns ("updated" | "created" | "none", note id or None). Raises GitLabNoteError on
    any API failure.
    """
    notes = api_call(
        "GET", mr.notes_url() + "?sort=desc&order_by=updated_at&per_page=100", mr.token
    )
    note_id = find_note(notes)
    if note_id is not None:
        api_call("PUT", mr.notes_url(note_id), mr.token, {"body": body})
        return "updated", note_id
    if not create:
        return "none", None
    created = api_call("POST", mr.notes_url(), mr.token, {"body": body})
    if not isinstance(created, dict) or not isinstance(created.get("id"), int):
        raise GitLabNoteError("POST note: the answer carries no note id")
    return "created", created["id"]
