"""The GitLab judge project's calls (docs/trust-model.md, `.gitlab/judge.yml`).

The judge runs in its own project, triggered by the gitops project's merge-request webhook;
GitLab hands it the event as `TRIGGER_PAYLOAD`, which is only a pointer: every fact the judge
acts on comes from the API with the judge's own token (REST v4, docs.gitlab.com/api):
- `merge_request_facts`: the merge request the payload names, re-read from `GET
  /projects/:id/merge_requests/:iid` (open, its `sha` and `target_branch`);
- `download_head_render`: the `head-render` artifact of the merge request's pipeline for that
  sha (`GET .../merge_requests/:iid/pipelines`, `GET .../pipelines/:id/jobs`, `GET
  .../jobs/:id/artifacts`), each `head-render/<stack>.yaml` extracted bounded, nothing else;
- `post_verdict`: the verdict as the judge bot's approval at that sha (`POST
  .../merge_requests/:iid/approve` with `sha`; `POST .../unapprove` otherwise), which the
  project's "dualstack judge" approval rule requires.
"""

from __future__ import annotations

import io
import json
import re
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dualstack.ci.gitlab_note import TIMEOUT_SECONDS, GitLabNoteError, api_call
from dualstack.ci.head_objects import MAX_BYTES
from dualstack.repo.atomic import write_file

MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
"""Largest artifact archive downloaded (bytes)."""

RENDER_JOB = "head-render"
"""The untrusted merge-request job whose artifact holds the head's render."""

_MEMBER = re.compile(r"^head-render/(?P<stack>[A-Za-z0-9_.-]+)\.yaml$")


@dataclass(frozen=True)
class GitLabProject:
    """The gitops project the judge judges: `api_url` is `$CI_API_V4_URL`."""

    api_url: str
    project: str
    token: str

    def url(self, path: str) -> str:
        quoted = urllib.parse.quote(self.project, safe="")
        return f"{self.api_url.rstrip('/')}/projects/{quoted}/{path}"


def payload_iid(path: Path) -> str:
    """The merge-request iid of a webhook payload file. Raises GitLabNoteError naming why
    it is not a merge-request event."""
    try:
        event = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GitLabNoteError(f"TRIGGER_PAYLOAD: not a JSON file ({exc})") from None
    attributes = event.get("object_attributes") if isinstance(event, dict) else None
    iid = attributes.get("iid") if isinstance(attributes, dict) else None
    if not isinstance(event, dict) or event.get("object_kind") != "merge_request":
        raise GitLabNoteError("TRIGGER_PAYLOAD: not a merge_request event")
    if not isinstance(iid, int) or isinstance(iid, bool) or iid < 1:
        raise GitLabNoteError("TRIGGER_PAYLOAD: object_attributes.iid is not a positive integer")
    return str(iid)


def merge_request_facts(gitops: GitLabProject, iid: str) -> tuple[str, str]:
    """(head sha, target branch) of open merge request `iid`, as the API says. Raises
    GitLabNoteError when it is not open or the answer lacks them."""
    answer: Any = api_call("GET", gitops.url(f"merge_requests/{iid}"), gitops.token)
    if not isinstance(answer, dict) or answer.get("state") != "opened":
        raise GitLabNoteError(f"!{iid} is not an open merge request: nothing to judge")
    sha, target = answer.get("sha"), answer.get("target_branch")
    if not (isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{40}", sha)):
        raise GitLabNoteError(f"!{iid}: the answer has no head sha")
    if not isinstance(target, str) or not target:
        raise GitLabNoteError(f"!{iid}: the answer has no target branch")
    return sha, target


def _raw_get(url: str, token: str) -> bytes:
    request = urllib.request.Request(url, method="GET")
    request.add_header("PRIVATE-TOKEN", token)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            raw = response.read(MAX_ARTIFACT_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise GitLabNoteError(f"GET {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise GitLabNoteError(f"GET {url}: {getattr(exc, 'reason', exc)}") from None
    if len(raw) > MAX_ARTIFACT_BYTES:
        raise GitLabNoteError(f"GET {url}: over {MAX_ARTIFACT_BYTES} bytes")
    return raw


def _render_job(gitops: GitLabProject, iid: str, sha: str) -> int:
    pipelines: Any = api_call("GET", gitops.url(f"merge_requests/{iid}/pipelines"), gitops.token)
    ids = sorted(
        (p["id"] for p in pipelines if isinstance(p, dict) and p.get("sha") == sha)
        if isinstance(pipelines, list)
        else [],
        reverse=True,
    )
    for pipeline in ids:
        jobs: Any = api_call(
            "GET", gitops.url(f"pipelines/{pipeline}/jobs?per_page=100"), gitops.token
        )
        for job in jobs if isinstance(jobs, list) else []:
            if (
                isinstance(job, dict)
                and job.get("name") == RENDER_JOB
                and job.get("status") == "success"
                and isinstance(job.get("id"), int)
            ):
                return job["id"]
    raise GitLabNoteError(f"!{iid}: no successful {RENDER_JOB} job for {sha[:12]}")


def download_head_render(gitops: GitLabProject, iid: str, sha: str, output: Path) -> list[str]:
    """Extract the head's render into `output/<stack>.yaml`; returns the stacks written.

    Only members named `head-render/<stack>.yaml` that are regular files of at most
    `MAX_BYTES` are written; any other member is ignored. Raises GitLabNoteError when the job,
    the archive or a member is missing or over its bound.
    """
    archive = _raw_get(gitops.url(f"jobs/{_render_job(gitops, iid, sha)}/artifacts"), gitops.token)
    try:
        members = zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile:
        raise GitLabNoteError(f"!{iid}: the {RENDER_JOB} artifact is not a zip archive") from None
    output.mkdir(parents=True, exist_ok=True)
    written = []
    for info in members.infolist():
        match = _MEMBER.match(info.filename)
        if match is None or info.is_dir() or (info.external_attr >> 16) & 0o170000 == 0o120000:
            continue
        if info.file_size > MAX_BYTES:
            raise GitLabNoteError(f"!{iid}: {info.filename} is over {MAX_BYTES} bytes")
        write_file(output / f"{match['stack']}.yaml", members.read(info)[: MAX_BYTES + 1])
        written.append(match["stack"])
    return sorted(written)


def post_verdict(gitops: GitLabProject, iid: str, sha: str, passed: bool) -> str:
    """Approve `iid` at `sha` when `passed`, else withdraw the judge's approval; returns what
    was done. An unapprove of a merge request the judge had not approved is no error."""
    if passed:
        api_call("POST", gitops.url(f"merge_requests/{iid}/approve"), gitops.token, {"sha": sha})
        return "approved"
    try:
        api_call("POST", gitops.url(f"merge_requests/{iid}/unapprove"), gitops.token, {})
    except GitLabNoteError as exc:
        if "HTTP 404" not in str(exc):
            raise
    return "not approved"
