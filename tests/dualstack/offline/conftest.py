"""Fixtures of the offline tests: git repos holding fixture stack files (never copies of the
committed `Pulumi.<stack>.yaml`, whose values a step PR changes)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, copy_code, git

VERIFIED = "registry/inference-service:v1.2.3-npu"


@pytest.fixture
def stack_repo(tmp_path: Path) -> Callable[..., Path]:
    """`stack_repo(weight, *lines)`: a git repo whose main holds the project file, this tree's
    code (the base's judge) and a fixture `Pulumi.prod.yaml` at `weight` (Ascend image
    verified) plus raw config `lines`."""

    def make(weight: int, *lines: str) -> Path:
        repo = tmp_path / "gitops"
        repo.mkdir()
        shutil.copy(REPO / "Pulumi.yaml", repo / "Pulumi.yaml")
        copy_code(repo)
        config = [
            "config:",
            f'  dualstack-inference:ascendWeight: "{weight}"',
            f"  dualstack-inference:verifiedAscendImage: {VERIFIED}",
            *(f"  {line}" for line in lines),
        ]
        (repo / "Pulumi.prod.yaml").write_text("\n".join(config) + "\n", encoding="utf-8")
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", f"prod at {weight}")
        return repo

    return make
