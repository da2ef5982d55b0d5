"""A stack file is a regular file (issue 28): read from the working tree or from git, a
symlink (git mode 120000) is refused with one line, never followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dualstack.repo.stackfile import StackFileError, read_config, read_config_at, read_text
from tests.conftest import git

TEXT = 'config:\n  dualstack-inference:ascendWeight: "5"\n'


def test_a_symlinked_stack_file_is_refused_in_the_working_tree(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "prod.yaml").write_text(TEXT)
    (tmp_path / "Pulumi.prod.yaml").symlink_to("docs/prod.yaml")
    expected = (
        "Pulumi.prod.yaml: a symlink (to docs/prod.yaml), not a regular file; a stack file "
        "must be a regular file"
    )
    with pytest.raises(StackFileError) as raised:
        read_config(tmp_path, "prod")
    assert str(raised.value) == expected
    with pytest.raises(StackFileError, match=r"^Pulumi\.prod\.yaml: a symlink"):
        read_text(tmp_path / "Pulumi.prod.yaml")


def test_a_stack_path_that_is_no_file_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "Pulumi.canary.yaml")  # a read would block: refused before it
    with pytest.raises(StackFileError, match=r"^Pulumi\.canary\.yaml: not a regular file$"):
        read_text(tmp_path / "Pulumi.canary.yaml")


def test_a_symlinked_stack_file_is_refused_at_a_git_ref(tmp_path: Path) -> None:
    """git's own view: the blob of a mode 120000 entry is the link's target, not a file."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "prod.yaml").write_text(TEXT)
    (tmp_path / "Pulumi.prod.yaml").symlink_to("docs/prod.yaml")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "linked")
    with pytest.raises(StackFileError) as raised:
        read_config_at(tmp_path, "prod", "HEAD")
    assert str(raised.value) == (
        "HEAD:Pulumi.prod.yaml: a symlink (git mode 120000), not a regular file; a stack "
        "file must be a regular file"
    )


def test_a_regular_stack_file_at_a_git_ref_is_read(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.prod.yaml").write_text(TEXT)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "regular")
    assert read_config_at(tmp_path, "prod", "HEAD") == {"dualstack-inference:ascendWeight": "5"}
    assert read_config_at(tmp_path, "staging", "HEAD") is None
