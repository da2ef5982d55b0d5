"""The owners' approval as the code host reports it: GitLab's merge-request approval rules.

`dualstack ci owner-approval` prints `--owner-approved` when the merge request's approval rules
are met (REST API v4, docs.gitlab.com/api/merge_request_approvals: `GET
/projects/:id/merge_requests/:iid/approvals` answers `"approved": true` once every rule, the
code-owner rule of a protected branch included, has its approvals), and nothing otherwise.
On the default branch (a deploy) the merge request is the one that merged the commit (`GET
/projects/:id/repository/commits/:sha/merge_requests`). GitHub's twin is `gh pr view
--json reviewDecision` in the workflows. Standard library only.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from dualstack.ci.gitlab_note import GitLabNoteError, MergeRequest, api_call

FLAG = "--owner-approved"
"""What the pipelines pass to `dualstack preview` / `policy-config` when the owners approved."""


def _project(api_url: str, project_id: str) -> str:
    return f"{api_url.rstrip('/')}/projects/{urllib.parse.quote(project_id, safe='')}"


def merge_request_of(api_url: str, project_id: str, sha: str, token: str) -> str:
    """The iid of the merged merge request that brought commit `sha`.

    Raises GitLabNoteError when the API fails or no merged merge request carries it (a direct
    push to the default branch has no approval).
    """
    found: Any = api_call(
        "GET", f"{_project(api_url, project_id)}/repository/commits/{sha}/merge_requests", token
    )
    if not isinstance(found, list):
        raise GitLabNoteError("commit merge requests: the answer is not a list")
    merged = [
        mr for mr in found if isinstance(mr, dict) and mr.get("state") == "merged" and "iid" in mr
    ]
    if not merged:
        raise GitLabNoteError(f"no merged merge request carries commit {sha[:12]}")
    return str(merged[0]["iid"])


def approved(mr: MergeRequest) -> bool:
    """True when GitLab reports the merge request's approval rules as met AND they asked for
    someone: `approved` is true, `approvals_required` is at least 1, `approvals_left` is 0 and
    `approved_by` names at least one approver.

    GitLab answers `"approved": true` for a project that requires no approvals (nothing is
    left to approve), so the flag alone would fail open: that answer, and any answer missing
    one of those fields, is not an approval. Raises GitLabNoteError when the API fails or
    answers without a boolean `approved`, or when the project requires no approval (one line
    naming the setting to change).
    """
    url = f"{_project(mr.api_url, mr.project_id)}/merge_requests/{mr.iid}/approvals"
    answer: Any = api_call("GET", url, mr.token)
    state = answer.get("approved") if isinstance(answer, dict) else None
    if not isinstance(state, bool):
        raise GitLabNoteError(f"approvals of !{mr.iid}: the answer has no `approved` flag")
    required = answer.get("approvals_required")
    if not _count(required) or required < 1:
        raise GitLabNoteError(
            f"approvals of !{mr.iid}: the project requires {required!r} approvals, so GitLab's "
            "`approved` proves no owner approved (fail closed): require code-owner approval "
            "on the protected branch"
        )
    left, approvers = answer.get("approvals_left"), answer.get("approved_by")
    return state and left == 0 and _count(left) and isinstance(approvers, list) and bool(approvers)


def _count(value: Any) -> bool:
    """A JSON integer (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)
