"""Changed-stack detection: pure rules, then real git repositories and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualstack.cli import main
from dualstack.repo.changes import (
    ChangesError,
    changed_stacks,
    deploy_order,
    is_production,
    stack_of,
    stacks_touched,
)
from tests.conftest import git

STACKS = ["prod", "staging"]


@pytest.mark.parametrize(
    ("path", "stack"),
    [
        ("Pulumi.prod.yaml", "prod"),
        ("Pulumi.staging.yml", None),  # not a stack: Pulumi reads `Pulumi.<stack>.yaml`
        ("Pulumi.prod-eu.yaml", "prod-eu"),
        ("Pulumi.yaml", None),  # the project file, not a stack
        ("sub/Pulumi.prod.yaml", None),  # another project's stack
        ("Pulumi.prod.yaml.bak", None),
    ],
)
def test_stack_of(path: str, stack: str | None) -> None:
    assert stack_of(path) == stack


def test_deploy_order_puts_production_last() -> None:
    assert deploy_order(["prod", "staging"]) == ["staging", "prod"]
    assert deploy_order(["prod-eu", "dev", "prod", "staging", "dev"]) == [
        "dev",
        "staging",
        "prod",
        "prod-eu",
    ]
    assert [is_production(s) for s in ("prod", "production", "prod_2", "products")] == [
        True,
        True,
        True,
        False,
    ]


def test_only_the_stack_whose_file_changed() -> None:
    found = stacks_touched(["Pulumi.prod.yaml", "README.md"], STACKS)
    assert found.stacks == ("prod",)
    assert found.removed == ()


@pytest.mark.parametrize(
    "path",
    [
        "components/traffic.py",
        "policies/traffic.py",
        "Pulumi.yaml",
        "__main__.py",
        # The Job's name hashes the checker's source: a checker change reaches every stack.
        "precision_check/compare.py",
        # The CLI renders, previews and gates every stack.
        "dualstack/offline/render.py",
        "pyproject.toml",
        "requirements.lock",
        # The pipelines run the judge.
        ".github/workflows/deploy.yml",
        ".gitlab-ci.yml",
        ".ci/record",
    ],
)
def test_what_deploys_or_judges_a_stack_touches_every_stack(path: str) -> None:
    assert stacks_touched([path], STACKS).stacks == ("staging", "prod"), path


def test_docs_and_tests_touch_no_stack() -> None:
    found = stacks_touched(["README.md", "docs/ARCHITECTURE.md", "tests/x.py"], STACKS)
    assert found.stacks == ()
    assert found.reason == "no stack file changed"


def test_a_removed_stack_is_reported_not_deployed() -> None:
    found = stacks_touched(["Pulumi.old.yaml", "Pulumi.prod.yaml"], STACKS)
    assert found.stacks == ("prod",)
    assert found.removed == ("old",)


def commit_weight(repo: Path, stack: str, weight: str) -> str:
    path = repo / f"Pulumi.{stack}.yaml"
    text = path.read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if "ascendWeight:" in line)
    path.write_text(text.replace(old, f'  dualstack-inference:ascendWeight: "{weight}"'))
    git(repo, "commit", "-qam", f"{stack} to {weight}")
    return git(repo, "rev-parse", "HEAD").strip()


def test_pull_request_branch_against_its_target(git_repo: Path) -> None:
    git(git_repo, "switch", "-qc", "promote-prod")
    commit_weight(git_repo, "prod", "20")
    found = changed_stacks(git_repo, "main")
    assert found.stacks == ("prod",)
    assert found.paths == ("Pulumi.prod.yaml",)


def test_target_branch_moving_on_does_not_count(git_repo: Path) -> None:
    """Three-dot diff: staging promoted on main after the branch point is not this PR's."""
    git(git_repo, "switch", "-qc", "promote-prod")
    commit_weight(git_repo, "prod", "20")
    git(git_repo, "switch", "-q", "main")
    commit_weight(git_repo, "staging", "50")
    git(git_repo, "switch", "-q", "promote-prod")
    assert changed_stacks(git_repo, "main").stacks == ("prod",)


def test_push_with_both_stacks_deploys_staging_first(git_repo: Path) -> None:
    before = git(git_repo, "rev-parse", "HEAD").strip()
    commit_weight(git_repo, "prod", "20")
    commit_weight(git_repo, "staging", "50")
    assert changed_stacks(git_repo, before).stacks == ("staging", "prod")


def test_a_stack_file_turned_into_a_symlink_touches_every_stack(git_repo: Path) -> None:
    """Issue 28: `Pulumi.prod.yaml` as a symlink into `docs/` would make every later change of
    prod a docs change: a symlink (git mode 120000) is the program, whatever its name."""
    git(git_repo, "switch", "-qc", "link")
    (git_repo / "docs").mkdir(exist_ok=True)
    stack = git_repo / "Pulumi.prod.yaml"
    (git_repo / "docs" / "prod.yaml").write_bytes(stack.read_bytes())
    stack.unlink()
    stack.symlink_to("docs/prod.yaml")
    git(git_repo, "add", ".")
    git(git_repo, "commit", "-qm", "prod via docs")
    found = changed_stacks(git_repo, "main")
    assert found.stacks == ("staging", "prod")
    assert found.reason == "the program changed (Pulumi.prod.yaml): every stack"


def test_a_symlink_under_docs_touches_every_stack(git_repo: Path) -> None:
    git(git_repo, "switch", "-qc", "link")
    (git_repo / "docs").mkdir(exist_ok=True)
    (git_repo / "docs" / "x.md").symlink_to("../Pulumi.yaml")
    git(git_repo, "add", ".")
    git(git_repo, "commit", "-qm", "a doc link")
    assert changed_stacks(git_repo, "main").stacks == ("staging", "prod")


def test_first_push_compares_with_nothing_and_takes_every_stack(git_repo: Path) -> None:
    found = changed_stacks(git_repo, "0" * 40)
    assert found.stacks == ("staging", "prod")
    assert "no base commit" in found.reason


def test_unknown_base_is_an_error_not_an_empty_list(git_repo: Path) -> None:
    with pytest.raises(ChangesError, match="'origin/main' is not a commit"):
        changed_stacks(git_repo, "origin/main")


def test_cli_prints_words_or_json_in_deploy_order(git_repo: Path, capsys) -> None:
    before = git(git_repo, "rev-parse", "HEAD").strip()
    commit_weight(git_repo, "prod", "20")
    commit_weight(git_repo, "staging", "50")
    assert main(["-C", str(git_repo), "ci", "changed-stacks", "--base", before]) == 0
    assert capsys.readouterr().out == "staging prod\n"
    assert main(["-C", str(git_repo), "ci", "changed-stacks", "--base", before, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == ["staging", "prod"]
    assert main(["-C", str(git_repo), "ci", "changed-stacks", "--base", "HEAD", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_cli_bad_base_exits_2_with_one_line(git_repo: Path, capsys) -> None:
    assert main(["-C", str(git_repo), "ci", "changed-stacks", "--base", "nope"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == [
        "error: base 'nope' is not a commit of this clone (shallow clone? fetch with depth 0)"
    ]
