"""`--open-pr`: push the step's branch and open its pull request (GitLab: merge request), as
Kargo's `git-open-pr` step does for a promotion.

After the commit (`--open-pr` implies `--commit`), `git push -u origin <branch>`, then the
first of these that is there:

1. `gh pr create --base <default> --head <branch> --title T --body-file F` (GitHub's CLI,
   logged in with `gh auth login` or `$GH_TOKEN`);
2. `glab mr create --source-branch <branch> --target-branch <default> --title T
   --description D --yes` (GitLab's CLI);
3. the REST API: GitHub `POST {$GITHUB_API_URL or https://api.github.com}/repos/{owner}/
   {repo}/pulls` (docs.github.com/rest/pulls/pulls#create-a-pull-request: `title`, `head`,
   `base`, `body`; `Authorization: Bearer $GITHUB_TOKEN` or `$GH_TOKEN`), the repository from
   `$GITHUB_REPOSITORY` or a github.com `origin`; GitLab `POST $CI_API_V4_URL/projects/
   {$CI_PROJECT_ID or the url-encoded path}/merge_requests` (docs.gitlab.com/api/
   merge_requests#create-mr: `source_branch`, `target_branch`, `title`, `description`;
   `PRIVATE-TOKEN: $GITLAB_TOKEN` or `$GITLAB_API_TOKEN`).

Every call is bounded (`TIMEOUT_S`). A failure raises OpenPrError naming what was done
(the commit, the push) and the command to finish by hand; the commit is never undone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from dualstack.redaction import redact
from dualstack.repo.git import GitError, git, git_or_none

TIMEOUT_S = 60.0
"""Seconds the push, the CLI or the API call may take."""

_GITHUB_REMOTE = re.compile(r"github\.com[:/](?P<repo>[^/\s]+/[^/\s]+?)(?:\.git)?/?$")


class OpenPrError(RuntimeError):
    """The branch could not be pushed or the pull request not opened; says what to do."""


@dataclass(frozen=True)
class OpenedPr:
    """The pull request opened: its `url` (as the tool printed it) and `via` what."""

    url: str
    via: str


def open_pr(root: Path, branch: str, base: str, title: str, body: str) -> OpenedPr:
    """Push `branch` to `origin` and open its pull request into `base` (a branch name, e.g.
    `main`) with `title` and `body`. Raises OpenPrError (see the module docstring)."""
    by_hand = (
        f"git push -u origin {branch}, then open the pull request into {base} yourself "
        "(the PR title and body are printed above)"
    )
    try:
        git(root, "push", "-q", "-u", "origin", branch, timeout=TIMEOUT_S)
    except GitError as exc:
        raise OpenPrError(f"--open-pr: the push failed ({exc}): {by_hand}") from None
    try:
        if shutil.which("gh"):
            return _gh(root, branch, base, title, body)
        if shutil.which("glab"):
            return _glab(root, branch, base, title, body)
        return _rest(root, branch, base, title, body)
    except OpenPrError as exc:
        raise OpenPrError(
            f"--open-pr: pushed {branch}, but {exc}; open the pull request into {base} yourself "
            "(the PR title and body are printed above)"
        ) from None


def _run(root: Path, argv: list[str], tool: str) -> str:
    """`argv`'s stdout; OpenPrError with its last error line when it fails or hangs."""
    try:
        done = subprocess.run(
            argv, cwd=root, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise OpenPrError(f"`{tool}` gave no answer within {TIMEOUT_S:g} s") from None
    except OSError as exc:
        raise OpenPrError(f"could not run {tool}: {exc.strerror or exc}") from None
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise OpenPrError(f"`{tool}` failed: {redact(why)}")
    return done.stdout


def _last_url(text: str) -> str:
    urls = re.findall(r"https?://\S+", text)
    return urls[-1] if urls else text.strip().splitlines()[-1] if text.strip() else ""


def _gh(root: Path, branch: str, base: str, title: str, body: str) -> OpenedPr:
    with tempfile.TemporaryDirectory(prefix="dualstack-pr-") as folder:
        body_file = Path(folder) / "body.md"
        body_file.write_text(body, encoding="utf-8")
        argv = ["gh", "pr", "create", "--base", base, "--head", branch, "--title", title]
        out = _run(root, [*argv, "--body-file", str(body_file)], "gh pr create")
    return OpenedPr(_last_url(out), "gh pr create")


def _glab(root: Path, branch: str, base: str, title: str, body: str) -> OpenedPr:
    argv = ["glab", "mr", "create", "--source-branch", branch, "--target-branch", base]
    out = _run(root, [*argv, "--title", title, "--description", body, "--yes"], "glab mr create")
    return OpenedPr(_last_url(out), "glab mr create")


def _origin(root: Path) -> str:
    return git_or_none(root, "remote", "get-url", "origin") or ""


def _rest(root: Path, branch: str, base: str, title: str, body: str) -> OpenedPr:
    """The REST API of GitHub or GitLab, as the environment and `origin` say."""
    env = os.environ
    github_repo = env.get("GITHUB_REPOSITORY")
    if not github_repo and (found := _GITHUB_REMOTE.search(_origin(root))):
        github_repo = found.group("repo")
    if github_repo:
        token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
        if not token:
            raise OpenPrError("no gh on PATH and no $GITHUB_TOKEN (or $GH_TOKEN) for the API")
        api = env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
        url = f"{api}/repos/{github_repo}/pulls"
        answer = _post(
            url,
            {"Authorization": f"Bearer {token}"},
            {
                "title": title,
                "head": branch,
                "base": base,
                "body": body,
            },
        )
        return OpenedPr(str(answer.get("html_url", "")), "the GitHub API")
    api = env.get("CI_API_V4_URL")
    if api:
        token = env.get("GITLAB_TOKEN") or env.get("GITLAB_API_TOKEN")
        if not token:
            raise OpenPrError("no glab on PATH and no $GITLAB_TOKEN (or $GITLAB_API_TOKEN)")
        project = env.get("CI_PROJECT_ID") or urllib.parse.quote(
            env.get("CI_PROJECT_PATH", ""), safe=""
        )
        url = f"{api.rstrip('/')}/projects/{project}/merge_requests"
        answer = _post(
            url,
            {"PRIVATE-TOKEN": token},
            {
                "source_branch": branch,
                "target_branch": base,
                "title": title,
                "description": body,
            },
        )
        return OpenedPr(str(answer.get("web_url", "")), "the GitLab API")
    raise OpenPrError(
        "no gh or glab on PATH, and neither $GITHUB_REPOSITORY (or a github.com origin) nor "
        "$CI_API_V4_URL says which API to ask"
    )


def _post(url: str, headers: dict[str, str], payload: dict[str, str]) -> dict:
    """POST `payload` as JSON; the decoded object answered. OpenPrError on an HTTP error, no
    answer within TIMEOUT_S, a redirect or an answer that is not a JSON object."""
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST")
    for name, value in {**headers, "Accept": "application/json"}.items():
        request.add_header(name, value)
    request.add_header("Content-Type", "application/json")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=TIMEOUT_S) as response:
            raw = response.read(1 << 20)
    except urllib.error.HTTPError as exc:
        raise OpenPrError(f"POST {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise OpenPrError(f"POST {url}: {getattr(exc, 'reason', exc)}") from None
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise OpenPrError(f"POST {url}: the answer is not a JSON object")
    return answer


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an error (the token would follow it elsewhere)."""

    def redirect_request(self, *args, **kwargs):
        return None
