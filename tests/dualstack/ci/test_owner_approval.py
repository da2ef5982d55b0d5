"""`dualstack ci owner-approval` against a local stand-in of GitLab's approvals API."""

from __future__ import annotations

import pytest

from dualstack.cli import main
from tests.support.gitlab_approvals import PROJECT, TOKEN, Approvals, gitlab_approvals


@pytest.fixture
def gitlab(monkeypatch):
    with gitlab_approvals(
        Approvals(approved={"7": True, "8": False}, merged_by={"abc1": "7"})
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
    assert gitlab.requests == ["/api/v4/projects/group%2Fgitops/merge_requests/7/approvals"]


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


def test_a_refusing_api_is_exit_2_not_an_approval(gitlab, monkeypatch, capsys):
    monkeypatch.setenv("CI_MERGE_REQUEST_IID", "7")
    monkeypatch.setenv("GITLAB_API_TOKEN", "wrong")
    code, out, err = approval(capsys)
    assert (code, out) == (2, "")
    assert "HTTP 401 Unauthorized" in err
