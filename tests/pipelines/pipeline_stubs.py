"""Stand-ins for `pulumi`, `gh`, `curl` and `make`, for running the pipelines' shell steps
(tests/pipeline_harness.py) in a throwaway GitOps repo.

Every stub appends its argv as one JSON line to `$STUB_LOG`; `dualstack` logs too, then runs
the real command (`preview`, `policy-config`, `rollback`, `verify-precision`, `ci`, and `gate`
against the real Prometheus the test passes as the pipeline's PROMETHEUS_URL). `make -C
base-checkout venv` installs the BASE's `dualstack` as `base-checkout/.venv/bin/dualstack`,
which logs as `judge` (with the commit its checkout is at) and runs the real CLI with the
checkout first on PYTHONPATH. Behaviour is steered by environment variables:
- `DEPLOYED_<stack>`: the deployed ascendWeight (`pulumi stack output ascendWeight`);
  `DEPLOYED_SERVICES_<stack>` a fleet's `services` output (JSON); an output unset is not
  exported (the real CLI's error); both unset = first deploy.
- `DEPLOYED_COMMIT_<stack>`: the stack tag `dualstack:deployed-commit`; unset = no tag yet.
- `PULUMI_PREVIEW_RC_<stack>`, `UP_RC_<stack>`: exit codes.
- `REVIEW_DECISION`: what `gh pr view --json reviewDecision` answers (e.g. APPROVED), at the
  head `REVIEWED_SHA` (default: the job's `HEAD_SHA`); `MERGED_PR`: the pull request `gh api
  .../commits/SHA/pulls` names on deploy, `OPEN_PR` ("<number> <base ref>") the open one the
  judge asks for.
`make -C DIR venv` installs the judge into `DIR/.venv/bin` (the judge job's own toolchain).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, copy_code, copy_stack_files, git

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
REAL = ("preview", "policy-config", "rollback", "gate", "verify-precision")
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
    name = argv[2]
    variable = f"DEPLOYED_SERVICES_{stack}" if name == "services" else f"DEPLOYED_{stack}"
    answer = os.environ.get(variable)
    if answer is None or name not in ("ascendWeight", "services"):
        sys.exit(f"error: current stack does not have output property '{name}'")
    print(answer)
    sys.exit(0)
if argv[:3] == ["stack", "tag", "get"]:
    commit = os.environ.get(f"DEPLOYED_COMMIT_{stack}")
    if not commit:
        sys.exit(f"error: stack tag '{argv[3]}' not found")
    print(commit)
    sys.exit(0)
if argv[:3] == ["stack", "tag", "set"]:
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

GH = """
log("gh")
if argv[:2] == ["pr", "view"]:
    decision = os.environ.get("REVIEW_DECISION", "")
    if "headRefOid" in opt("--json", ""):
        decision = f"{decision} {os.environ.get('REVIEWED_SHA', os.environ.get('HEAD_SHA', ''))}"
    print(decision)
elif argv[:1] == ["api"] and argv[1].endswith("/pulls"):
    open_pr = "select(.state" in (opt("--jq") or "")
    print(os.environ.get("OPEN_PR" if open_pr else "MERGED_PR", ""))
"""

MAKE = """
log("make")
if len(argv) != 3 or argv[0] != "-C" or argv[2] != "venv":
    sys.exit(f"stub make: unexpected {argv}")
bin_dir = pathlib.Path(argv[1], ".venv", "bin")
bin_dir.mkdir(parents=True, exist_ok=True)
judge = bin_dir / "dualstack"
judge.write_text(pathlib.Path(os.environ["STUB_BIN"], "judge").read_text())
judge.chmod(0o755)
"""

JUDGE = """
import subprocess
checkout = pathlib.Path(sys.argv[0]).resolve().parents[2]
commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"],
                        capture_output=True, text=True).stdout.strip()
with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as out:
    out.write(json.dumps(["judge", *argv]) + "\\n")
    out.write(json.dumps(["judge-at", str(checkout), commit]) + "\\n")
env = {**os.environ, "PYTHONPATH": str(checkout)}  # -P: not the job's cwd (the head) first,
os.execve(sys.executable, [sys.executable, "-P", "-m", "dualstack", *argv], env)  # as in a venv
"""


def install_stubs(bin_dir: Path) -> None:
    """Write the stubs into `bin_dir` (to be put first on PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in {
        "dualstack": DUALSTACK,
        "pulumi": PULUMI,
        "gh": GH,
        "curl": LOG_ONLY,
        "make": MAKE,
        "judge": JUDGE,
    }.items():
        path = bin_dir / name
        path.write_text(COMMON + body, encoding="utf-8")
        path.chmod(0o755)


def calls(log: Path, tools: tuple[str, ...] = ("judge", "dualstack", "pulumi")) -> list[list[str]]:
    """The logged argv lists of `tools`, in order."""
    if not log.exists():
        return []
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [argv for argv in lines if argv[0] in tools]


def make_gitops(tmp: Path, with_code: bool = True) -> tuple[Path, Path]:
    """A bare `origin` and a clone holding the fixture stack files, `.ci/record` and this
    tree's code on main (the base checkout judges with its own code, and a head can edit it;
    `with_code=False` for a repo of stack files only).

    Returns (clone, origin). The clone's `origin/main` is the pushed main.
    """
    origin = tmp / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    clone = tmp / "gitops"
    clone.mkdir()
    copy_stack_files(clone)
    (clone / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "record", clone / ".ci" / "record")
    (clone / ".gitignore").write_text(
        "reports/\nreport.md\n.harness/\npolicy-config.json\n__pycache__/\n*.pyc\n"
    )
    if with_code:
        copy_code(clone)
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
