"""The pull-request options `promote` and `rollback` share: `--commit`, `--open-pr`,
`--branch`, `--body-file`, with `commit_plan` (the checks made before anything changes) and
`publish` (print the PR text, write the body file, commit the step, open its PR)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dualstack.repo.atomic import write_file
from dualstack.repo.stackfile import stack_path
from dualstack.step.pr_text import commit_message
from dualstack.step.publish import CommitPlan, commit_on_new_branch, local_branch, prepare_commit


def add_pr_arguments(parser: argparse.ArgumentParser) -> None:
    """Options `promote` and `rollback` share: the git branch and commit, the body file."""
    parser.add_argument(
        "--commit",
        action="store_true",
        help="create a branch and commit the stack file on it (only that file)",
    )
    parser.add_argument(
        "--open-pr",
        action="store_true",
        help="commit as --commit does, push the branch to origin and open the pull request "
        "(merge request): with gh or glab when on PATH, else the GitHub or GitLab REST API "
        "($GITHUB_TOKEN, $GITLAB_TOKEN)",
    )
    parser.add_argument("--branch", help="branch name for --commit (default: dualstack/...)")
    parser.add_argument(
        "--body-file", type=Path, metavar="FILE", help="write the PR body here (for gh pr create)"
    )


def publish(
    args: argparse.Namespace,
    root: Path,
    commit: tuple[CommitPlan, str, bytes] | None,
    title: str,
    body: str,
    notes: list[str],
) -> tuple[dict[str, str] | None, dict[str, str]]:
    """Print the PR title and body, write --body-file, and with --commit (`commit`: the plan,
    the branch, the stack file's bytes to restore if the commit fails) commit the step; with
    --open-pr push it and open the pull request (`dualstack.step.open_pr`).
    Returns (`{"sha", "branch", "base"}` of the commit or None without --commit, `{"url",
    "via"}` of the pull request opened or {}). Raises OpenPrError after the commit when the
    push or the pull request failed."""
    print(f"--- PR title ---\n{title}\n--- PR body ---")
    sys.stdout.write(body)
    if args.body_file is not None:
        write_file(args.body_file, body)
    if commit is None:
        return None, {}
    plan, branch, original = commit
    path = stack_path(root, args.stack)
    sha = commit_on_new_branch(root, path, branch, commit_message(title, notes), original)
    where = "" if plan.in_place else " (in a temporary worktree; your checkout is untouched)"
    done = {"sha": sha, "branch": branch, "base": plan.base}
    if not getattr(args, "open_pr", False):
        print(f"--- committed {sha} on branch {branch}, from {plan.base}{where}; push it and open")
        print(f"the PR:\ngit push -u origin {branch}")
        return done, {}
    print(f"--- committed {sha} on branch {branch}, from {plan.base}{where}")
    from dualstack.step.open_pr import open_pr  # urllib and subprocess: only when asked

    opened = open_pr(root, branch, local_branch(root, plan.base), title, body)
    print(f"--- pushed {branch} and opened the pull request ({opened.via}): {opened.url}")
    return done, {"url": opened.url, "via": opened.via}


def commit_plan(args: argparse.Namespace, root: Path) -> CommitPlan | None:
    """With --commit, the checks made before anything changes (see `prepare_commit`)."""
    if getattr(args, "open_pr", False):
        args.commit = True  # a pull request needs the commit on its branch
    if not args.commit:
        return None
    return prepare_commit(root, stack_path(root, args.stack), args.stack)
