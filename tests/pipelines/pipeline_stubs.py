"""Stand-ins for `pulumi`, `gh` and `curl`, for running the pipelines' shell steps
(tests/pipeline_harness.py) in a throwaway GitOps repo.

Every stub appends its argv as one JSON line to `$STUB_LOG`; `dualstack` logs too, then runs
the real command (`preview`, `policy-config`, `rollback`, `ci`, and `gate` against the real
Prometheus the test passes as the pipeline's PROMETHEUS_URL). Behaviour is steered by
environment variables:
- `DEPLOYED_<stack>`: the deployed ascendWeight (`pulumi stack output`); unset = first deploy.
- `PULUMI_PREVIEW_RC_<stack>`, `UP_RC_<stack>`: exit codes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, copy_stack_files, git

COMMON = f"""#!{sys.executable}
import json, os, pathlib, re, sys
argv = sys.argv[1:]
def log(tool):
    with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as out:
        out.write(json.dumps([tool, *argv]) + "\\n")
def opt(name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default
def rc(name):
    return int(os.environ.get(name) or 0)
"""

DUALSTACK = """
REAL = ("preview", "policy-config", "rollback", "gate")
if argv[:1] != ["ci"]:
    log("dualstack")
if argv and (argv[0] == "ci" or argv[0] in REAL):
    os.execv(sys.executable, [sys.executable, "-m", "dualstack", *argv])
sys.exit(f"stub dualstack: unexpected {argv}")
"""

PULUMI = """
log("pulumi")
stack = opt("--stack")
if argv[:2] == ["stack", "output"]:
    weight = os.environ.get(f"DEPLOYED_{stack}")
    if weight is None:
        sys.exit("error: current stack does not have output property 'ascendWeight'")
    print(weight)
    sys.exit(0)
if argv[:2] == ["config", "set"]:
    sys.exit("error: PULUMI_ACCESS_TOKEN must be set for login in non-interactive sessions")
if argv[0] == "preview":
    print(f"Previewing update ({stack})\\nPolicies:\\n    dualstack-policies: all pass")
    sys.exit(rc(f"PULUMI_PREVIEW_RC_{stack}"))
if argv[0] == "up":
    print(f"Updating ({stack})")
    sys.exit(rc(f"UP_RC_{stack}"))
sys.exit(f"stub pulumi: unexpected {argv}")
"""

LOG_ONLY = """
log(os.path.basename(sys.argv[0]))
"""


def install_stubs(bin_dir: Path) -> None:
    """Write the stubs into `bin_dir` (to be put first on PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in {
        "dualstack": DUALSTACK,
        "pulumi": PULUMI,
        "gh": LOG_ONLY,
        "curl": LOG_ONLY,
    }.items():
        path = bin_dir / name
        path.write_text(COMMON + body, encoding="utf-8")
        path.chmod(0o755)


def calls(log: Path, tools: tuple[str, ...] = ("dualstack", "pulumi")) -> list[list[str]]:
    """The logged argv lists of `tools`, in order."""
    if not log.exists():
        return []
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [argv for argv in lines if argv[0] in tools]


def make_gitops(tmp: Path) -> tuple[Path, Path]:
    """A bare `origin` and a clone holding the fixture stack files and `.ci/record` on main.

    Returns (clone, origin). The clone's `origin/main` is the pushed main.
    """
    origin = tmp / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    clone = tmp / "gitops"
    clone.mkdir()
    copy_stack_files(clone)
    (clone / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "record", clone / ".ci" / "record")
    (clone / ".gitignore").write_text("reports/\nreport.md\n.harness/\npolicy-config.json\n")
    git(clone, "init", "-q", "-b", "main")
    git(clone, "add", ".")
    git(clone, "commit", "-q", "-m", "initial stacks")
    git(clone, "remote", "add", "origin", str(origin))
    git(clone, "push", "-q", "origin", "main")
    git(clone, "fetch", "-q", "origin")
    return clone, origin


def set_weight(repo: Path, stack: str, weight: int) -> None:
    """Edit and commit `ascendWeight` of a stack, as `pulumi config set` would."""
    path = repo / f"Pulumi.{stack}.yaml"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(
        "".join(
            f'  dualstack-inference:ascendWeight: "{weight}"\n' if "ascendWeight:" in ln else ln
            for ln in lines
        ),
        encoding="utf-8",
    )
    git(repo, "commit", "-q", "-am", f"{stack}: ascendWeight {weight}")
