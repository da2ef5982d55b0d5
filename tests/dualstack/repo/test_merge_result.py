"""GitLab judges the merge result, not the source branch against the target's tip (issue 28):
a stale branch's plain step is judged as it would land, with the target's later changes in
it, never refused for changes it did not make. `dualstack ci merge-result` builds it from git
objects alone (`git merge-tree`), so nothing of the head runs."""

from __future__ import annotations

import pytest

from dualstack.cli import main
from tests.conftest import git
from tests.support.judge_repos import PROD, commit, failed_policies, make_repo, preview, write_stack


@pytest.fixture
def stale(tmp_path):
    """main at prod 5; branch `step` raises prod to 20; then main lands an approved envelope
    change (capacity.totalReplicas 6) the branch never saw. The working tree is the branch."""
    repo = make_repo(tmp_path)
    git(repo, "switch", "-qc", "step")
    write_stack(repo, "prod", {**PROD, "ascendWeight": "20"})
    commit(repo, "prod to 20")
    git(repo, "switch", "-q", "main")
    write_stack(repo, "prod", {**PROD, "capacity": {"totalReplicas": 6}})
    commit(repo, "prod capacity 6 (approved)")
    git(repo, "switch", "-q", "step")
    return repo


def test_the_branch_tree_against_the_target_tip_reverts_the_target_s_change(stale, capsys):
    """Why: judged as it is, the stale branch 'changes' capacity back to 4."""
    code, out, err = preview(stale, capsys, "--base", "main")
    assert code == 1
    assert "safety-envelope-unchanged" in failed_policies(err)
    assert "capacity.totalReplicas: 6 -> 4" in out


def test_the_merge_result_of_a_stale_plain_step_is_a_plain_step(stale, capsys):
    merged = stale / "merge-result"
    assert (
        main(["-C", str(stale), "ci", "merge-result", "--base", "main", "--worktree", str(merged)])
        == 0
    )
    commit_id = capsys.readouterr().out.strip()
    assert git(merged, "rev-parse", "HEAD").strip() == commit_id
    parents = git(stale, "rev-list", "--parents", "-n", "1", commit_id).split()[1:]
    assert parents == [git(stale, "rev-parse", r).strip() for r in ("main", "step")]
    code, out, err = preview(merged, capsys, "--base", "main")
    assert code == 0, out + err
    assert "Ascend weight: 5% -> 20%" in out
    assert "Safety envelope: unchanged; the step changes ascendWeight 5 -> 20" in out


def test_a_branch_already_on_the_target_is_its_own_merge_result(tmp_path, capsys):
    """A merged-results pipeline checks out the merge commit: merging the target it was made
    from changes nothing, and no commit is made."""
    repo = make_repo(tmp_path)
    git(repo, "switch", "-qc", "step")
    write_stack(repo, "prod", {**PROD, "ascendWeight": "20"})
    commit(repo, "prod to 20")
    assert main(["-C", str(repo), "ci", "merge-result", "--base", "main"]) == 0
    assert capsys.readouterr().out.strip() == git(repo, "rev-parse", "HEAD").strip()


def test_a_conflicting_branch_has_no_merge_result(stale, capsys):
    """Both sides changed the weight line: there is nothing to judge but a rebase (exit 2)."""
    git(stale, "switch", "-q", "main")
    write_stack(stale, "prod", {**PROD, "ascendWeight": "0", "capacity": {"totalReplicas": 6}})
    commit(stale, "prod rolled back to 0")
    git(stale, "switch", "-q", "step")
    assert main(["-C", str(stale), "ci", "merge-result", "--base", "main"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: HEAD does not merge into main without conflicts (Pulumi.prod.yaml): rebase "
        "the branch onto main, then judge it"
    )
