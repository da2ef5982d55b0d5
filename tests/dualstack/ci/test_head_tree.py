"""`dualstack ci merge-result` and `ci head-tree`: the head as git objects, a step laid out as
the base's files with the head's stack files, anything else a program change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dualstack.ci.head_tree import build_head_tree, classify
from dualstack.cli import main
from dualstack.repo.merge_result import merge_commit
from tests.conftest import git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small repository: a program file, two stack files and a doc, on main."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "Pulumi.yaml").write_text("name: p\n")
    (root / "__main__.py").write_text("print('base')\n")
    (root / "Pulumi.prod.yaml").write_text('config:\n  p:ascendWeight: "5"\n')
    (root / "Pulumi.staging.yaml").write_text('config:\n  p:ascendWeight: "20"\n')
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("doc\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    git(root, "switch", "-q", "-c", "head")
    return root


def commit(root: Path, message: str = "head") -> str:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()


def test_a_step_is_the_bases_files_with_the_heads_stack_files(repo: Path, tmp_path: Path) -> None:
    (repo / "Pulumi.prod.yaml").write_text('config:\n  p:ascendWeight: "20"\n')
    (repo / "docs" / "sitecustomize.py").write_text("raise SystemExit('ran')\n")
    (repo / "Pulumi.staging.yaml").unlink()
    commit(repo)
    venv = tmp_path / "venv"
    venv.mkdir()
    out = tmp_path / "head"
    found = build_head_tree(repo, "main", "head", out, venv)
    assert (found.kind, found.program) == ("step", ())
    assert (out / "Pulumi.prod.yaml").read_text() == 'config:\n  p:ascendWeight: "20"\n'
    assert not (out / "Pulumi.staging.yaml").exists()
    assert not (out / "docs" / "sitecustomize.py").exists()  # inert files stay the base's
    assert (out / "__main__.py").read_text() == "print('base')\n"
    assert os.readlink(out / ".venv") == str(venv)
    status = git(out, "status", "--porcelain").split("\n")
    assert sorted(line for line in status if line) == [
        " D Pulumi.staging.yaml",
        " M Pulumi.prod.yaml",
    ]


@pytest.mark.parametrize(
    "change",
    ["program", "symlink", "mode", "nested-stack-name", "venv"],
)
def test_anything_else_is_a_program_change(repo: Path, tmp_path: Path, change: str) -> None:
    if change == "program":
        (repo / "__main__.py").write_text("print('head')\n")
    elif change == "symlink":
        (repo / "Pulumi.prod.yaml").unlink()
        (repo / "Pulumi.prod.yaml").symlink_to("docs/a.md")
    elif change == "mode":
        (repo / "Pulumi.prod.yaml").chmod(0o755)
    elif change == "nested-stack-name":
        (repo / "components").mkdir()
        (repo / "components" / "Pulumi.prod.yaml").write_text("x\n")
    else:
        (repo / ".venv" / "bin").mkdir(parents=True)
        (repo / ".venv" / "bin" / "git").write_text("#!/bin/sh\n")
        git(repo, "add", "-f", ".venv")
    commit(repo)
    out = tmp_path / "head"
    found = build_head_tree(repo, "main", "head", out)
    if change == "mode":  # a regular file with the x bit is still a regular file
        assert found.kind == "step"
        return
    assert found.kind == "program" and found.program
    if change == "symlink":
        assert not (out / "Pulumi.prod.yaml").is_symlink()  # checked out as a plain file


def test_merge_result_judges_the_heads_changes_not_the_bases_newer_ones(repo: Path) -> None:
    (repo / "Pulumi.prod.yaml").write_text('config:\n  p:ascendWeight: "20"\n')
    head = commit(repo)
    git(repo, "switch", "-q", "main")
    (repo / "Pulumi.staging.yaml").write_text('config:\n  p:ascendWeight: "50"\n')
    base = commit(repo, "main moved on")
    merge = merge_commit(repo, base, head)
    assert git(repo, "rev-parse", f"{merge}^1", f"{merge}^2").split() == [base, head]
    found = classify(repo, base, merge)
    assert [change.path for change in found.stack_files] == ["Pulumi.prod.yaml"]


def test_the_cli_prints_the_kind(repo: Path, tmp_path: Path, capsys) -> None:
    (repo / "__main__.py").write_text("print('head')\n")
    commit(repo)
    args = ["-C", str(repo), "ci", "head-tree", "--base", "main", "--head", "head"]
    assert main([*args, "--output", str(tmp_path / "head")]) == 0
    captured = capsys.readouterr()
    assert captured.out == "program\n"
    assert captured.err == "head-tree: the program changes: __main__.py\n"
