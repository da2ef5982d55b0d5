"""Real git repositories for the judge's tests: this tree's code plus fixture stack files.

The stack files are written here from `PROD` / `STAGING` (never the committed
`Pulumi.<stack>.yaml` values). The base commit on `main` holds this tree's code, so a preview
run in-process judges with the same code; `run_head()` instead runs the HEAD's own code (the
repository's working tree first on PYTHONPATH), which then asks the base's code to judge in a
temporary worktree, as a pull request that edits the code would.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from components.settings import PROJECT
from dualstack.cli import main
from tests.conftest import REPO, copy_code, git

V123 = {
    "nvidia": "registry/inference-service:v1.2.3-cuda",
    "ascend": "registry/inference-service:v1.2.3-npu",
}
V124 = {
    "nvidia": "registry/inference-service:v1.2.4-cuda",
    "ascend": "registry/inference-service:v1.2.4-npu",
}

PROD: dict[str, Any] = {"ascendWeight": "5", "verifiedImages": [V123]}
"""A fixture prod stack: the seed article's cluster at 5 %, the v1.2.3 pair verified."""

STAGING: dict[str, Any] = {
    "ascendWeight": "20",
    "namespace": "inference-staging",
    "capacity": {"totalReplicas": 2},
    "verifiedImages": [V123],
}
"""A fixture staging stack: a smaller footprint, one rung ahead."""


def stack_text(keys: dict[str, Any], extra: dict[str, Any] | None = None) -> str:
    """A `Pulumi.<stack>.yaml` holding `keys` under the project namespace (+ full `extra`)."""
    config = {f"{PROJECT}:{key}": value for key, value in keys.items()}
    config.update(extra or {})
    buffer = io.StringIO()
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.dump({"config": config}, buffer)
    return buffer.getvalue()


def write_stack(
    repo: Path, stack: str, keys: dict[str, Any], extra: dict[str, Any] | None = None
) -> None:
    """Write `Pulumi.<stack>.yaml` from project keys (and `extra` keys of other namespaces)."""
    (repo / f"Pulumi.{stack}.yaml").write_text(stack_text(keys, extra), encoding="utf-8")


def make_repo(
    root: Path, prod: dict[str, Any] | None = None, staging: dict[str, Any] | None = None
) -> Path:
    """A git repo on `main`: Pulumi.yaml, this tree's code, fixture prod and staging stacks."""
    repo = root / "gitops"
    repo.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", repo / "Pulumi.yaml")
    copy_code(repo)
    (repo / ".gitignore").write_text("__pycache__/\n*.pyc\n", encoding="utf-8")
    write_stack(repo, "prod", PROD if prod is None else prod)
    write_stack(repo, "staging", STAGING if staging is None else staging)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def commit(repo: Path, message: str) -> None:
    """Commit everything in the working tree on the current branch."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)


def edit_code(repo: Path, path: str, old: str, new: str) -> None:
    """Replace `old` (which must occur) by `new` in the repo's copy of a code file."""
    file = repo / path
    text = file.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    file.write_text(text.replace(old, new), encoding="utf-8")


def preview(repo: Path, capsys: Any, *args: str, stack: str = "prod") -> tuple[int, str, str]:
    """`dualstack preview --stack S --base main ARGS` in-process: (exit code, stdout, stderr)."""
    code = main(["-C", str(repo), "preview", "--stack", stack, "--base", "main", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_head(repo: Path, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m dualstack -C repo ARGV` run by the HEAD's code: the repo's working tree is
    first on PYTHONPATH, so its (possibly edited) modules are the ones imported."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    return subprocess.run(
        [sys.executable, "-m", "dualstack", "-C", str(repo), *argv],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_base(base: Path, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m dualstack -C base ARGV` run by the code of the checkout `base`, the way the
    pipelines run `base-checkout/.venv/bin/dualstack`: `base` alone on PYTHONPATH and as the
    working folder, so nothing of the head is importable (the head is read as data)."""
    env = {**os.environ, "PYTHONPATH": str(base)}
    return subprocess.run(
        [sys.executable, "-m", "dualstack", "-C", str(base), *argv],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def failed_policies(err: str) -> set[str]:
    """The policies named on `policy check failed: a, b` (stderr's first line), or none."""
    first = err.splitlines()[0] if err else ""
    prefix = "policy check failed: "
    return set(first.removeprefix(prefix).split(", ")) if first.startswith(prefix) else set()
