"""The owners' approval as the code host reports it: GitLab's merge-request approval rules.

`dualstack ci owner-approval` prints `--owner-approved` when the merge request's approval rules,
the judge's own rule aside, are met (REST API v4, docs.gitlab.com/api/merge_request_approvals:
`GET /projects/:id/merge_requests/:iid/approval_state` lists each rule, the code-owner rule of
a protected branch included, with `approved` and `approved_by`), and nothing otherwise.
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


JUDGE_RULE = "dualstack judge"
"""The approval rule the judge bot satisfies (docs/trust-model.md): its approval is the
judge's verdict, never the owners'."""


def approved(mr: MergeRequest) -> bool:
    """True when every approval rule of the merge request but the judge's is met and they ask
    for someone (`GET .../merge_requests/:iid/approval_state`): their `approvals_required` add
    up to at least 1, each rule is `approved`, and each rule that requires approvals names an
    approver in `approved_by`.

    GitLab reports a merge request that requires no approval as approved (nothing is left to
    approve), so "approved" alone would fail open: a project whose rules, the judge's aside,
    require nobody raises GitLabNoteError (one line naming the setting to change), and a rule
    missing one of those fields is not met. Raises GitLabNoteError when the API fails or
    answers without a list of rules.
    """
    url = f"{_project(mr.api_url, mr.project_id)}/merge_requests/{mr.iid}/approval_state"
    answer: Any = api_call("GET", url, mr.token)
    rules = answer.get("rules") if isinstance(answer, dict) else None
    if not isinstance(rules, list) or not all(isinstance(rule, dict) for rule in rules):
        raise GitLabNoteError(f"approval state of !{mr.iid}: the answer has no list of rules")
    owners = [rule for rule in rules if rule.get("name") != JUDGE_RULE]
    counts = [rule.get("approvals_required") for rule in owners]
    required = sum(count for count in counts if _count(count) and count > 0)
    if required < 1:
        raise GitLabNoteError(
            f"approval state of !{mr.iid}: the project requires {required} approvals (the "
            "judge's aside), so GitLab's `approved` proves no owner approved (fail closed): "
            "require code-owner approval on the protected branch"
        )
    return all(_met(rule) for rule in owners)


def _met(rule: dict[str, Any]) -> bool:
    count, approvers = rule.get("approvals_required"), rule.get("approved_by")
    if not _count(count) or rule.get("approved") is not True:
        return False
    return count < 1 or (isinstance(approvers, list) and bool(approvers))


def _count(value: Any) -> bool:
    """A JSON integer (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)
