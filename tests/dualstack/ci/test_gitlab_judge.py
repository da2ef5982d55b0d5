"""The GitLab judge project's calls against a local stand-in of the gitops project's API:
the payload is only a pointer, the artifact is extracted bounded, the verdict is the bot's
approval at the judged sha."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from dualstack.ci import gitlab_judge
from dualstack.ci.gitlab_judge import GitLabProject
from dualstack.ci.gitlab_note import GitLabNoteError
from dualstack.cli import main
from tests.support.gitlab_approvals import PROJECT, TOKEN, Approvals, gitlab_approvals

SHA = "a" * 40


def archive(members: dict[str, str], link: str | None = None) -> bytes:
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w") as out:
        for name, text in members.items():
            out.writestr(name, text)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = 0o120777 << 16
            out.writestr(info, "/etc/passwd")
    return raw.getvalue()


@pytest.fixture
def gitlab(monkeypatch):
    members = {
        "head-render/prod.yaml": "kind: A\n",
        "head-render/../../evil.yaml": "x",
        "reports/prod/offline-preview.rc": "0\n",
    }
    state = Approvals(
        merge_requests={
            "7": {"sha": SHA, "target_branch": "main", "state": "opened"},
            "8": {"sha": SHA, "target_branch": "main", "state": "merged"},
        },
        artifacts={SHA: archive(members, link="head-render/staging.yaml")},
    )
    with gitlab_approvals(state) as served:
        monkeypatch.setenv("CI_API_V4_URL", served.url)
        monkeypatch.setenv("GITOPS_PROJECT", PROJECT)
        monkeypatch.setenv("GITLAB_API_TOKEN", TOKEN)
        yield served


def payload(tmp_path: Path, event: object) -> Path:
    path = tmp_path / "payload.json"
    path.write_text(json.dumps(event))
    return path


def test_the_payload_names_the_merge_request_the_api_describes(gitlab, tmp_path, capsys):
    event = {"object_kind": "merge_request", "object_attributes": {"iid": 7, "last_commit": {}}}
    assert main(["ci", "gitlab-merge-request", "--payload", str(payload(tmp_path, event))]) == 0
    assert capsys.readouterr().out == f"7 {SHA} main\n"


@pytest.mark.parametrize(
    ("event", "cause"),
    [
        ({"object_kind": "push"}, "not a merge_request event"),
        ({"object_kind": "merge_request", "object_attributes": {"iid": "7"}}, "positive integer"),
        ({"object_kind": "merge_request", "object_attributes": {"iid": 8}}, "not an open"),
    ],
)
def test_anything_else_is_nothing_to_judge(gitlab, tmp_path, capsys, event, cause):
    assert main(["ci", "gitlab-merge-request", "--payload", str(payload(tmp_path, event))]) == 2
    assert cause in capsys.readouterr().err


def test_only_the_head_render_yaml_files_are_extracted(gitlab, tmp_path):
    project = GitLabProject(gitlab.url, PROJECT, TOKEN)
    out = tmp_path / "untrusted"
    assert gitlab_judge.download_head_render(project, "7", SHA, out) == ["prod"]
    assert sorted(p.name for p in out.iterdir()) == ["prod.yaml"]  # no symlink, no traversal
    assert not (tmp_path / "evil.yaml").exists()


def test_no_render_for_another_sha_is_an_error(gitlab, tmp_path):
    project = GitLabProject(gitlab.url, PROJECT, TOKEN)
    with pytest.raises(GitLabNoteError, match="no successful head-render job"):
        gitlab_judge.download_head_render(project, "7", "b" * 40, tmp_path / "out")


def test_the_verdict_approves_at_the_sha_or_withdraws(gitlab, capsys):
    args = ["ci", "gitlab-verdict", "--iid", "7", "--sha", SHA]
    assert main([*args, "--status", "0"]) == 0
    assert main([*args, "--status", "1"]) == 0
    assert main([*args, "--status", "2"]) == 0
    assert gitlab.verdicts == [
        ("7", "approve", SHA),
        ("7", "unapprove", ""),
        ("7", "unapprove", ""),
    ]


def test_without_the_judge_projects_variables_nothing_is_called(monkeypatch, capsys):
    monkeypatch.delenv("GITOPS_PROJECT", raising=False)
    assert main(["ci", "gitlab-verdict", "--iid", "7", "--sha", SHA, "--status", "0"]) == 2
    assert "GITOPS_PROJECT" in capsys.readouterr().err
