"""The architecture contract (pyproject.toml `[tool.importlinter]`), checked by import-linter.

The program does not import the CLI, the pack and the checker import nothing of the project,
no command imports another, and no sibling modules import each other in a cycle.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from dualstack.cli import COMMANDS
from tests.conftest import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd)},
    )


def test_the_repository_keeps_every_contract() -> None:
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 5 kept, 0 broken." in done.stdout


def test_every_verb_is_under_the_leaves_contract() -> None:
    """A new verb added to the CLI must be added to the independence contract too."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}
    listed = contracts["verbs-are-leaves"]["modules"]
    assert sorted(listed) == sorted(f"dualstack.commands.{verb}" for verb in COMMANDS)


def test_a_program_module_importing_the_cli_breaks_the_contract(tmp_path: Path) -> None:
    """The same contract over a tiny tree where components/ imports dualstack/ fails."""
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    for package in ("components", "policies", "precision_check", "dualstack"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    commands = tmp_path / "dualstack" / "commands"
    commands.mkdir()
    (commands / "__init__.py").write_text("")
    for verb in (
        "render",
        "preview",
        "status",
        "gate",
        "promote",
        "rollback",
        "policy_config",
        "precision_check",
        "verify_precision",
        "ci",
        "completion",
    ):
        (commands / f"{verb}.py").write_text("")
    (tmp_path / "components" / "stack.py").write_text("import dualstack.commands.render\n")
    (commands / "rollback.py").write_text("from dualstack.commands import promote\n")
    done = lint_imports(tmp_path)
    assert done.returncode == 1
    assert "The Pulumi program does not import the CLI BROKEN" in done.stdout
    assert "No command imports another command BROKEN" in done.stdout
    assert "components.stack -> dualstack.commands.render" in done.stdout
