"""Which stacks a repo holds has one answer (`dualstack.repo.stackfile.stacks`): every verb's
`-s` default, `rollback --all --emergency`, the changed-stack detection and the messages agree,
also with files that look like stack files but are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualstack.commands.stacks import every_stack, one_stack
from dualstack.errors import UsageError
from dualstack.repo.changes import stacks_at, stacks_touched
from dualstack.repo.stackfile import StackFileError, read_config, stack_of, stacks
from dualstack.step.traffic_first import fleet
from tests.conftest import FIXTURE_STACKS, copy_stack_files, git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The fixture stacks (prod, staging) beside look-alikes: `Pulumi.dev.yml` (Pulumi reads
    `Pulumi.<stack>.yaml` only, its project file being `Pulumi.yaml`), and a backup."""
    copy_stack_files(tmp_path)
    staging = (FIXTURE_STACKS / "Pulumi.staging.yaml").read_bytes()
    (tmp_path / "Pulumi.dev.yml").write_bytes(staging)
    (tmp_path / "Pulumi.prod.yaml.bak").write_bytes(staging)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "stacks and look-alikes")
    return tmp_path


def test_every_way_of_finding_the_stacks_agrees(repo: Path) -> None:
    assert stacks(repo) == ["prod", "staging"]
    assert every_stack(repo, None) == ["prod", "staging"]
    assert fleet(repo) == ["staging", "prod"]  # the same stacks, in deploy order
    assert stacks_at(repo, "HEAD") == ["staging", "prod"]
    with pytest.raises(UsageError, match=r"this repo has 2: prod, staging\)$"):
        one_stack(repo, None, "rollback")
    with pytest.raises(StackFileError, match=r"stacks here: prod, staging$"):
        read_config(repo, "dev")


def test_a_yml_file_is_no_stack_and_its_change_is_the_programs() -> None:
    assert [stack_of(n) for n in ("Pulumi.dev.yml", "Pulumi.yaml", "Pulumi.prod.yaml")] == [
        None,
        None,
        "prod",
    ]
    touched = stacks_touched(["Pulumi.dev.yml"], ["prod", "staging"])
    assert touched.stacks == ("staging", "prod")  # fail closed: every stack is previewed
    assert touched.reason.startswith("the program changed (Pulumi.dev.yml)")


def test_one_stack_file_is_the_default_stack(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.prod.yaml").write_bytes((FIXTURE_STACKS / "Pulumi.prod.yaml").read_bytes())
    (tmp_path / "Pulumi.dev.yml").write_text("config: {}\n")
    assert one_stack(tmp_path, None, "rollback") == "prod"
    assert stacks(tmp_path) == ["prod"]
