"""Stand-ins for the emergency rollback's tools, and a GitOps repo with fixture stack files.

`install_emergency_tools(bin_dir, python)` writes `pulumi`, `gh`, `curl`, `dualstack` and a
logging `git` into `bin_dir`. Each appends one JSON line `[tool, *argv]` to `$STUB_LOG`, so a
test reads the order of every call across tools; `git` logs only the verbs that change
something (checkout -b, commit, push) and then runs the real git. `pulumi` is steered by:

- `RUNNING_<stack>=1`: an update is running, so `cancel` cancels it and `stack export` shows
  the pending operation it left; otherwise `cancel` answers like the Pulumi Cloud with no
  update running (`[409] Conflict: The Update has already completed`, pulumi/pulumi#5364).
- `CANCEL_FAIL=1`: `cancel` fails otherwise (`[401] Unauthorized`).
- `DEPLOYED_<stack>`: the deployed ascendWeight (a fleet's: the JSON `stack output services`
  prints); unset, `stack output` fails.
- `UP_RC_<stack>`: the exit code of `up` (default 0).
`up` logs the `ascendWeight` the stack file holds when it runs (`"weight=N"` appended; a
fleet's every service's, `"weight=N,M,..."` in file order), which is what the real CLI would
apply. `gh run list` prints `$GH_RUNS`, `gh pr create` `$GH_PR_URL` (default a github.com pull
request URL); `curl` prints `$CURL_OUT`.

The stack files are this module's own fixtures (`FIXTURE_STACKS`), never the committed ones.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, git

STACK_TEXT = {
    "prod": (
        "# prod fixture: the article's cluster\n"
        "config:\n"
        '  dualstack-inference:ascendWeight: "{weight}"\n'
        "  dualstack-inference:verifiedAscendImage: registry/inference-service:v1.2.3-npu\n"
    ),
    "staging": (
        "# staging fixture: a smaller footprint\n"
        "config:\n"
        '  dualstack-inference:ascendWeight: "{weight}"\n'
        "  dualstack-inference:namespace: inference-staging\n"
        "  dualstack-inference:capacity:\n"
        "    totalReplicas: 2\n"
        "  dualstack-inference:verifiedAscendImage: registry/inference-service:v1.2.3-npu\n"
    ),
    "fleet": (
        "# fleet fixture: three services on the article's pools\n"
        "config:\n"
        "  dualstack-inference:namespace: inference-fleet\n"
        "  dualstack-inference:services:\n"
        "    chat:\n"
        "      ascendWeight: {weight}\n"
        "      verifiedAscendImage: registry/inference-service:v1.2.3-npu\n"
        "    embedder:\n"
        "      ascendWeight: 20\n"
        "      capacity:\n"
        "        totalReplicas: 2\n"
        "      verifiedAscendImage: registry/inference-service:v1.2.3-npu\n"
        "    reranker:\n"
        "      ascendWeight: 0\n"
        "      capacity:\n"
        "        totalReplicas: 2\n"
    ),
}
"""Fixture stack files by stack; `{weight}` is the Ascend weight."""

COMMON = """#!{python}
import json, os, pathlib, re, sys
argv = sys.argv[1:]
def log(tool, *extra):
    with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as out:
        out.write(json.dumps([tool, *argv, *extra]) + "\\n")
def opt(name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default
"""

PULUMI = """
stack = opt("--stack")
running = os.environ.get(f"RUNNING_{stack}") == "1"
if argv[:1] == ["up"]:
    text = pathlib.Path(f"Pulumi.{stack}.yaml").read_text()
    log("pulumi", "weight=" + ",".join(re.findall(r'ascendWeight: "?(\\d+)', text)))
else:
    log("pulumi")
if argv[:1] == ["cancel"]:
    if os.environ.get("CANCEL_FAIL") == "1":
        sys.exit("error: [401] Unauthorized: No credentials provided or are invalid.")
    if not running:
        sys.exit("error: [409] Conflict: The Update has already completed")
    print(f"The currently running update for '{stack}' has been canceled!")
    sys.exit(0)
if argv[:2] == ["stack", "output"]:
    weight = os.environ.get(f"DEPLOYED_{stack}")
    if weight is None:
        sys.exit("error: current stack does not have output property 'ascendWeight'")
    print(weight)
    sys.exit(0)
if argv[:2] == ["stack", "export"]:
    pending = [{"resource": {"urn": f"urn:pulumi:{stack}::dualstack-inference::"
                "dualstack:index:DualStackInference$dualstack:index:InferenceWorkload"
                "$kubernetes:apps/v1:Deployment::inference-ascend-deployment"},
                "type": "updating"}] if running else []
    print(json.dumps({"version": 3, "deployment": {"pending_operations": pending}}))
    sys.exit(0)
if argv[:1] == ["up"]:
    print(f"Updating ({stack})")
    sys.exit(int(os.environ.get(f"UP_RC_{stack}") or 0))
sys.exit(f"stub pulumi: unexpected {argv}")
"""

GIT = """
verb = list(argv)
while verb[:1] in (["-C"], ["-c"]):
    verb = verb[2:]
if verb[:1] in (["commit"], ["push"]) or verb[:1] == ["checkout"] and "-b" in verb:
    argv = verb
    log("git")
os.execv({git!r}, [{git!r}, *sys.argv[1:]])
"""

GH = """
log("gh")
if argv[:2] == ["run", "list"]:
    print(os.environ.get("GH_RUNS", ""))
if argv[:2] == ["pr", "create"]:
    print(os.environ.get("GH_PR_URL", "https://github.com/acme/gitops/pull/1"))
"""

CURL = """
log("curl")
print(os.environ.get("CURL_OUT", "[]"))
"""

DUALSTACK = """
log("dualstack")
os.execv(sys.executable, [sys.executable, "-m", "dualstack", *argv])
"""


def install_emergency_tools(bin_dir: Path, python: str = sys.executable) -> None:
    """Write the stand-ins into `bin_dir` (to be put first on PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    real_git = shutil.which("git")
    assert real_git, "git is needed"
    bodies = {
        "pulumi": PULUMI,
        "git": GIT.replace("{git!r}", repr(real_git)),
        "gh": GH,
        "curl": CURL,
        "dualstack": DUALSTACK,
    }
    for name, body in bodies.items():
        path = bin_dir / name
        path.write_text(COMMON.format(python=python) + body, encoding="utf-8")
        path.chmod(0o755)


def calls(log: Path, tools: tuple[str, ...] = ("pulumi", "git", "gh", "curl")) -> list[list[str]]:
    """The logged `[tool, *argv]` lines of `tools`, in order."""
    if not log.exists():
        return []
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line[0] in tools]


def write_stack(repo: Path, stack: str, weight: int) -> None:
    """Write the fixture `Pulumi.<stack>.yaml` at `weight`."""
    path = repo / f"Pulumi.{stack}.yaml"
    path.write_text(STACK_TEXT[stack].format(weight=weight), encoding="utf-8")


def make_gitops(tmp: Path, weights: dict[str, int]) -> tuple[Path, Path]:
    """A bare `origin` and a clone on `main` holding `Pulumi.yaml` and the fixture stacks at
    `weights` ({stack: %}), pushed; the clone's `origin/main` is that commit.

    Returns (clone, origin).
    """
    origin = tmp / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    clone = tmp / "gitops"
    clone.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", clone / "Pulumi.yaml")
    for stack, weight in weights.items():
        write_stack(clone, stack, weight)
    (clone / ".gitignore").write_text(".harness/\nbody.md\n", encoding="utf-8")
    git(clone, "init", "-q", "-b", "main")
    git(clone, "add", ".")
    git(clone, "commit", "-q", "-m", "fixture stacks")
    git(clone, "remote", "add", "origin", str(origin))
    git(clone, "push", "-q", "origin", "main")
    git(clone, "fetch", "-q", "origin")
    return clone, origin
