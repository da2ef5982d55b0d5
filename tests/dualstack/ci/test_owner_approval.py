"""`dualstack ci owner-approval` against a local stand-in of GitLab's approvals API."""

from __future__ import annotations

import pytest

from dualstack.ci import approval as approval_module
from dualstack.ci.gitlab_note import GitLabNoteError, MergeRequest
from dualstack.cli import main
from tests.support.gitlab_approvals import PROJECT, TOKEN, Approvals, gitlab_approvals

API = "http://127.0.0.1:9/api/v4"  # never called: the tests replace api_call


@pytest.fixture
def gitlab(monkeypatch):
    with gitlab_approvals(
        Approvals(
            approved={"7": True, "8": False, "9": False, "10": True},
            required={"9": 0, "10": 0},
            merged_by={"abc1": "7", "abc9": "9"},
        )
    ) as state:
        monkeypatch.setenv("CI_API_V4_URL", state.url)
        monkeypatch.setenv("CI_PROJECT_ID", PROJECT)
        monkeypatch.setenv("GITLAB_API_TOKEN", TOKEN)
        yield state


def approval(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["ci", "owner-approval", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_an_approved_merge_request_prints_the_flag(gitlab, monkeypatch, capsys):
    monkeypatch.setenv("CI_MERGE_REQUEST_IID", "7")
    assert approval(capsys) == (0, "--owner-approved\n", "owner-approval: !7 approved\n")
    assert gitlab.requests == ["/api/v4/projects/group%2Fgitops/merge_requests/7/approval_state"]


def test_an_unapproved_merge_request_prints_nothing(gitlab, monkeypatch, capsys):
    monkeypatch.setenv("CI_MERGE_REQUEST_IID", "8")
    assert approval(capsys) == (0, "", "owner-approval: !8 not approved\n")


def test_on_deploy_the_merge_request_of_the_commit_decides(gitlab, monkeypatch, capsys):
    monkeypatch.delenv("CI_MERGE_REQUEST_IID", raising=False)
    assert approval(capsys, "--commit", "abc1")[1] == "--owner-approved\n"
    code, out, err = approval(capsys, "--commit", "def2")
    assert (code, out) == (2, "")
    assert err == "error: no merged merge request carries commit def2\n"


def test_without_a_token_nothing_is_approved(gitlab, monkeypatch, capsys):
    monkeypatch.setenv("CI_MERGE_REQUEST_IID", "7")
    monkeypatch.delenv("GITLAB_API_TOKEN")
    assert approval(capsys) == (0, "", "owner-approval: no GITLAB_API_TOKEN: not approved\n")
    assert gitlab.requests == []


def test_outside_a_merge_request_pipeline_nothing_is_asked(gitlab, monkeypatch, capsys):
    """Without --commit the merge request is the pipeline's: CI_MERGE_REQUEST_IID is needed."""
    monkeypatch.delenv("CI_MERGE_REQUEST_IID", raising=False)
    monkeypatch.delenv("CI_PROJECT_ID")
    assert approval(capsys) == (
        2,
        "",
        "error: owner-approval: CI_PROJECT_ID, CI_MERGE_REQUEST_IID unset\n",
    )
    assert approval(capsys, "--commit", "abc1") == (
        2,
        "",
        "error: owner-approval: CI_PROJECT_ID unset\n",
    )
    assert gitlab.requests == []


def test_a_refusing_api_is_exit_2_not_an_approval(gitlab, monkeypatch, capsys):
    monkeypatch.setenv("CI_MERGE_REQUEST_IID", "7")
    monkeypatch.setenv("GITLAB_API_TOKEN", "wrong")
    code, out, err = approval(capsys)
    assert (code, out) == (2, "")
    assert "HTTP 401 Unauthorized" in err


@pytest.mark.parametrize("iid", ["9", "10"])
def test_a_project_requiring_no_approval_is_never_approved(gitlab, monkeypatch, capsys, iid):
    # GitLab answers `approved: true` when nothing is required: that is no owner's approval.
    monkeypatch.setenv("CI_MERGE_REQUEST_IID", iid)
    code, out, err = approval(capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"error: approval state of !{iid}: the project requires 0 approvals (the judge's aside), "
        "so GitLab's `approved` proves no owner approved (fail closed): require code-owner "
        "approval on the protected branch\n"
    )


def test_on_deploy_zero_required_approvals_fail_closed(gitlab, monkeypatch, capsys):
    monkeypatch.delenv("CI_MERGE_REQUEST_IID", raising=False)
    assert approval(capsys, "--commit", "abc9")[:2] == (2, "")


def rule(**fields: object) -> dict[str, object]:
    base = {"name": "owners", "approvals_required": 1, "approved": True, "approved_by": [{}]}
    return {**base, **fields}


JUDGE = {"name": "dualstack judge", "approvals_required": 1, "approved": False, "approved_by": []}


@pytest.mark.parametrize(
    "rules",
    [
        [rule(approved_by=[])],
        [rule(approved=False)],
        [rule(approved="true")],
        [rule(), rule(name="security", approved=False)],
        [rule(approvals_required=True), rule(name="b")],
        [rule(approved_by=None)],
    ],
)
def test_a_rule_missing_a_fact_is_not_met(monkeypatch, rules):
    monkeypatch.setattr(approval_module, "api_call", lambda *args: {"rules": [*rules, JUDGE]})
    assert approval_module.approved(MergeRequest(API, PROJECT, "7", TOKEN)) is False


@pytest.mark.parametrize(
    "rules",
    [
        [],
        [rule(approvals_required=0)],
        [rule(approvals_required=True)],
        [rule(approvals_required="1")],
    ],
)
def test_no_required_owner_approval_fails_closed(monkeypatch, rules):
    # the judge's own rule requires 1, which is no owner's approval
    monkeypatch.setattr(approval_module, "api_call", lambda *args: {"rules": [*rules, JUDGE]})
    with pytest.raises(GitLabNoteError, match="fail closed"):
        approval_module.approved(MergeRequest(API, PROJECT, "7", TOKEN))


def test_an_answer_without_rules_is_an_error(monkeypatch):
    monkeypatch.setattr(approval_module, "api_call", lambda *args: {"approved": True})
    with pytest.raises(GitLabNoteError, match="no list of rules"):
        approval_module.approved(MergeRequest(API, PROJECT, "7", TOKEN))


def test_met_rules_with_approvers_are_an_approval_the_judges_rule_aside(monkeypatch):
    rules = [
        rule(approvals_required=2),
        rule(name="optional", approvals_required=0, approved_by=[]),
        JUDGE,
    ]
    monkeypatch.setattr(approval_module, "api_call", lambda *args: {"rules": rules})
    assert approval_module.approved(MergeRequest(API, PROJECT, "7", TOKEN)) is True
