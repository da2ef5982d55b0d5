"""The pull-request options `promote` and `rollback` share: `--commit`, `--branch`,
`--body-file`, with `commit_plan` (the checks made before anything changes) and `publish`
(print the PR text, write the body file, commit the step)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dualstack.repo.atomic import write_file
from dualstack.repo.stackfile import stack_path
from dualstack.step.pr_text import commit_message
from dualstack.step.publish import CommitPlan, commit_on_new_branch, prepare_commit


def add_pr_arguments(parser: argparse.ArgumentParser) -> None:
    """Options `promote` and `rollback` share: the git branch and commit, the body file."""
    parser.add_argument(
        "--commit",
        action="store_true",
        help="create a branch and commit the stack file on it (only that file)",
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
) -> dict[str, str] | None:
    """Print the PR title and body, write --body-file, and with --commit (`commit`: the plan,
    the branch, the stack file's bytes to restore if the commit fails) commit the step.
    Returns `{"sha", "branch", "base"}` of the commit, or None without --commit."""
    print(f"--- PR title ---\n{title}\n--- PR body ---")
    sys.stdout.write(body)
    if args.body_file is not None:
        write_file(args.body_file, body)
    if commit is None:
        return None
    plan, branch, original = commit
    path = stack_path(root, args.stack)
    sha = commit_on_new_branch(root, path, branch, commit_message(title, notes), original)
    where = "" if plan.in_place else " (in a temporary worktree; your checkout is untouched)"
    print(f"--- committed {sha} on branch {branch}, from {plan.base}{where}; push it and open")
    print(f"the PR:\ngit push -u origin {branch}")
    return {"sha": sha, "branch": branch, "base": plan.base}


def commit_plan(args: argparse.Namespace, root: Path) -> CommitPlan | None:
    """With --commit, the checks made before anything changes (see `prepare_commit`)."""
    if not args.commit:
        return None
    return prepare_commit(root, stack_path(root, args.stack), args.stack)
