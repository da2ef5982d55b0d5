"""`--open-pr` (Kargo's `git-open-pr`): promote or rollback commits the step, pushes its branch
to a real bare `origin` and opens the pull request: with `gh` when on PATH (a stand-in that
logs what it was asked), else the GitHub REST API (a server on 127.0.0.1 answering as
api.github.com does), else one line saying what was done and what is left.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from dualstack.cli import main
from tests.conftest import git
from tests.support.pulumi_stub import hide_pulumi

GH = """#!{python}
import json, os, pathlib, sys
argv = sys.argv[1:]
given = argv[argv.index("--body-file") + 1] if "--body-file" in argv else None
body = pathlib.Path(given).read_text() if given else None
with open(os.environ["GH_LOG"], "a") as log:
    log.write(json.dumps({{"argv": argv, "body": body}}) + "\\n")
print("https://github.com/acme/gitops/pull/7")
"""
API_ENV = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_REPOSITORY",
    "GITHUB_API_URL",
    "CI_API_V4_URL",
    "GITLAB_TOKEN",
    "GITLAB_API_TOKEN",
    "CI_PROJECT_ID",
    "CI_PROJECT_PATH",
)


@pytest.fixture
def repo(git_repo: Path, tmp_path: Path, monkeypatch) -> Path:
    """The fixture repo with a bare `origin` holding main (origin/main its tip), no Pulumi
    CLI, no gh or glab, and no API settings from the environment."""
    hide_pulumi(monkeypatch)
    entries = os.environ.get("PATH", "").split(os.pathsep)
    kept = [e for e in entries if not any((Path(e) / t).exists() for t in ("gh", "glab"))]
    monkeypatch.setenv("PATH", os.pathsep.join(kept))
    for name in API_ENV:
        monkeypatch.delenv(name, raising=False)
    for var, value in (("NAME", "Test"), ("EMAIL", "test@example.com")):
        monkeypatch.setenv(f"GIT_AUTHOR_{var}", value)
        monkeypatch.setenv(f"GIT_COMMITTER_{var}", value)
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(git_repo, "remote", "add", "origin", str(origin))
    git(git_repo, "push", "-q", "origin", "main")
    git(git_repo, "fetch", "-q", "origin")
    return git_repo


def on_origin(repo: Path, branch: str) -> bool:
    return bool(git(repo, "ls-remote", "--heads", "origin", branch).strip())


def test_promote_open_pr_pushes_and_opens_it_with_gh(repo, tmp_path, monkeypatch, capsys):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(GH.format(python=sys.executable))
    (bin_dir / "gh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GH_LOG", str(tmp_path / "gh.jsonl"))
    argv = ["promote", "-s", "prod", "--skip-gate", "--reason", "staging held", "--open-pr"]
    assert main(["-C", str(repo), *argv, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    branch = "dualstack/prod-ascend-20"
    assert on_origin(repo, branch)
    (call,) = [json.loads(line) for line in (tmp_path / "gh.jsonl").read_text().splitlines()]
    title = doc["pr"]["title"]
    assert call["argv"][:8] == [
        "pr",
        "create",
        "--base",
        "main",
        "--head",
        branch,
        "--title",
        title,
    ]
    assert call["body"] == doc["pr"]["body"]
    assert doc["pr"]["url"] == "https://github.com/acme/gitops/pull/7"
    assert doc["pr"]["via"] == "gh pr create"
    assert doc["commit"]["branch"] == branch


class _GitHub(BaseHTTPRequestHandler):
    """POST /repos/acme/gitops/pulls as api.github.com answers it (201, the pull request)."""

    seen: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        _GitHub.seen.append(
            {
                "path": self.path,
                "auth": self.headers.get("Authorization"),
                "body": json.loads(self.rfile.read(length)),
            }
        )
        answer = json.dumps({"html_url": "https://github.com/acme/gitops/pull/8"}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_args) -> None:
        pass


@pytest.fixture
def github_api():
    """A GitHub-like API on 127.0.0.1, stopped by the test."""
    _GitHub.seen = []
    server = HTTPServer(("127.0.0.1", 0), _GitHub)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _GitHub.seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_rollback_open_pr_without_gh_uses_the_github_api(repo, github_api, monkeypatch, capsys):
    url, seen = github_api
    monkeypatch.setenv("GITHUB_API_URL", url)
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/gitops")
    monkeypatch.setenv("GITHUB_TOKEN", "s3cret")
    assert main(["-C", str(repo), "rollback", "-s", "prod", "--open-pr"]) == 0
    out = capsys.readouterr().out
    branch = "dualstack/prod-rollback-0"
    assert on_origin(repo, branch)
    (request,) = seen
    assert request["path"] == "/repos/acme/gitops/pulls"
    assert request["auth"] == "Bearer s3cret"
    assert (request["body"]["head"], request["body"]["base"]) == (branch, "main")
    assert request["body"]["title"] == "prod: roll back Ascend weight 5% -> 0%"
    assert request["body"]["body"] in out  # the body printed is the body sent
    assert (
        f"--- pushed {branch} and opened the pull request (the GitHub API): "
        "https://github.com/acme/gitops/pull/8\n"
    ) in out
    assert "s3cret" not in out


def test_open_pr_with_no_way_to_open_it_says_what_was_done(repo, capsys):
    assert main(["-C", str(repo), "rollback", "-s", "prod", "--open-pr"]) == 2
    captured = capsys.readouterr()
    branch = "dualstack/prod-rollback-0"
    assert captured.err == (
        f"error: --open-pr: pushed {branch}, but no gh or glab on PATH, and neither "
        "$GITHUB_REPOSITORY (or a github.com origin) nor $CI_API_V4_URL says which API to "
        "ask; open the pull request into main yourself (the PR title and body are printed "
        "above)\n"
    )
    assert on_origin(repo, branch)  # the commit and the push stand
    assert git(repo, "log", "-1", "--format=%s", branch).strip().startswith("prod: roll back")
