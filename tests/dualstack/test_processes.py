"""Child processes end with their bound, grandchildren included (issue 34).

Real children that start real grandchildren: one in the child's process group, one that moved
to a session of its own (`setsid`) and keeps the child's stdout open, the way a daemonising
plugin or a hook's background job does. Through `dualstack.processes.run_bounded` directly,
through git (a hung pre-commit hook, `dualstack.repo.git.git`), through the Pulumi CLI (a
stand-in `pulumi` on PATH, `dualstack.pulumi_cli`), and through Ctrl-C of a running command.
After each, every pid the tree wrote down is gone, within a stated bound.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dualstack.processes import LINGER_S, Timeout, run_bounded
from dualstack.pulumi_cli import PulumiCliError, read_deployed_weight
from dualstack.repo.git import GitError, git
from tests import conftest
from tests.support.bounded_process import spawn, stop

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="descendants are found through /proc"
)

GONE_WITHIN_S = 5.0

TREE = textwrap.dedent(
    """\
    import os, sys, time
    pids, then = sys.argv[1], sys.argv[2]
    def note(pid):
        with open(pids, "a") as out:
            out.write(f"{pid}\\n")
    note(os.getpid())
    if os.fork() == 0:  # a grandchild in the child's group, holding stdout
        note(os.getpid())
        time.sleep(300)
        os._exit(0)
    if os.fork() == 0:  # a detached grandchild: its own session, still holding stdout
        os.setsid()
        if os.fork() == 0:  # ... and its parent gone: only the pipe links it to us
            note(os.getpid())
            time.sleep(300)
            os._exit(0)
        os._exit(0)
    time.sleep(0.3)
    print("answer", flush=True)
    if then == "hang":
        time.sleep(300)
    os._exit(0)
    """
)


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _pids(path: Path, count: int, within: float = 5.0) -> list[int]:
    """The pids the tree wrote to `path`, once it wrote `count` of them."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if path.exists():
            pids = [int(line) for line in path.read_text().split()]
            if len(pids) >= count:
                return pids
        time.sleep(0.05)
    raise AssertionError(f"the tree wrote {path.read_text() if path.exists() else 'nothing'}")


def _all_gone(pids: list[int], within: float = GONE_WITHIN_S) -> list[int]:
    """The pids still alive after `within` seconds (empty: all gone)."""
    end = time.monotonic() + within
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if _alive(p)]
    for pid in left:  # never leave them behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    return left


@pytest.fixture
def tree_script(tmp_path: Path) -> Path:
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    return script


def test_a_hung_child_is_killed_at_its_bound_with_every_grandchild(tmp_path, tree_script):
    pids_file = tmp_path / "pids"
    started = time.monotonic()
    with pytest.raises(Timeout, match="no answer within 1 s"):
        run_bounded([sys.executable, str(tree_script), str(pids_file), "hang"], timeout=1.0)
    assert time.monotonic() - started < 1.0 + GONE_WITHIN_S
    assert _all_gone(_pids(pids_file, 3)) == []


def test_a_child_that_exits_returns_at_once_and_a_grandchild_holding_its_output_dies(
    tmp_path, tree_script
):
    pids_file = tmp_path / "pids"
    started = time.monotonic()
    done = run_bounded([sys.executable, str(tree_script), str(pids_file), "exit"], timeout=60)
    took = time.monotonic() - started
    assert done.returncode == 0 and done.stdout == b"answer\n"
    assert took < 0.3 + LINGER_S + 2.0, took  # not the grandchildren's 300 s
    assert _all_gone(_pids(pids_file, 3)) == []


def test_ctrl_c_of_the_waiting_process_ends_the_whole_tree(tmp_path, tree_script):
    """SIGINT (what a terminal's Ctrl-C sends to dualstack's group; the child is in a session
    of its own and gets nothing) to a process inside `run_bounded`: it ends, with the tree."""
    pids_file = tmp_path / "pids"
    waiter = (
        "import sys\nfrom dualstack.processes import run_bounded\n"
        f"run_bounded([sys.executable, {str(tree_script)!r}, {str(pids_file)!r}, 'hang'], "
        "timeout=300)\n"
    )
    process = spawn([sys.executable, "-c", waiter], stderr=subprocess.PIPE, text=True)
    try:
        pids = _pids(pids_file, 3)
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=GONE_WITHIN_S)
    finally:
        stop(process)
    assert "KeyboardInterrupt" in err
    assert _all_gone(pids) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_of_the_waiting_process_ends_the_whole_tree(
    tmp_path, tree_script, signum
):
    """A cancelled CI job (SIGTERM) or a closed terminal (SIGHUP) would not reach the child in
    its own session: the waiting process ends the tree, then exits 128 + the signal."""
    pids_file = tmp_path / "pids"
    waiter = (
        "import sys\nfrom dualstack.processes import run_bounded\n"
        f"run_bounded([sys.executable, {str(tree_script)!r}, {str(pids_file)!r}, 'hang'], "
        "timeout=300)\n"
    )
    process = spawn([sys.executable, "-c", waiter], stderr=subprocess.PIPE, text=True)
    try:
        pids = _pids(pids_file, 3)
        process.send_signal(signum)
        _out, err = process.communicate(timeout=GONE_WITHIN_S)
    finally:
        stop(process)
    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err
    assert _all_gone(pids) == []


HOOK = """#!/bin/sh
echo $$ >> "{pids}"
sleep 300 &
echo $! >> "{pids}"
setsid sh -c 'echo $$ >> "{pids}"; exec sleep 300' &
sleep 300
"""


def test_a_hung_pre_commit_hook_and_its_children_end_with_git_s_bound(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    conftest.git(repo, "init", "-q", "-b", "main")
    (repo / "file").write_text("x\n")
    conftest.git(repo, "add", "file")
    conftest.git(repo, "config", "user.name", "t")
    conftest.git(repo, "config", "user.email", "t@example.com")
    pids_file = tmp_path / "pids"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(HOOK.format(pids=pids_file))
    hook.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(GitError, match=r"^git commit: no answer within 2 s$"):
        git(repo, "commit", "-qm", "x", timeout=2)
    assert time.monotonic() - started < 2 + GONE_WITHIN_S
    assert _all_gone(_pids(pids_file, 3)) == []


FAKE_PULUMI = """#!{python}
import os, sys, time
sys.argv = [sys.argv[0], {pids!r}, {then!r}]
exec(open({tree!r}).read())
"""


def _fake_pulumi(tmp_path: Path, tree_script: Path, then: str, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pids_file = tmp_path / "pids"
    script = bin_dir / "pulumi"
    script.write_text(
        FAKE_PULUMI.format(
            python=sys.executable, pids=str(pids_file), then=then, tree=str(tree_script)
        )
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return pids_file


def test_a_hung_pulumi_cli_ends_with_its_plugins_at_the_bound(tmp_path, tree_script, monkeypatch):
    pids_file = _fake_pulumi(tmp_path, tree_script, "hang", monkeypatch)
    started = time.monotonic()
    with pytest.raises(Exception, match="gave no answer within 1 s") as caught:
        read_deployed_weight(tmp_path, "prod", timeout=1.0)
    assert not isinstance(caught.value, PulumiCliError)  # StackOutputError, as before
    assert time.monotonic() - started < 1 + GONE_WITHIN_S
    assert _all_gone(_pids(pids_file, 3)) == []


def test_a_pulumi_cli_leaving_a_detached_child_on_its_stdout_is_not_waited_for(
    tmp_path, tree_script, monkeypatch
):
    """The CLI answers and exits; its detached child keeps stdout open for 300 s. The answer
    is read within LINGER_S, and the child is ended (issue 34: `status` ran 251 s over)."""
    pids_file = _fake_pulumi(tmp_path, tree_script, "exit", monkeypatch)
    started = time.monotonic()
    with pytest.raises(Exception, match="returned 'answer', not a weight"):
        read_deployed_weight(tmp_path, "prod", timeout=120)
    assert time.monotonic() - started < 0.3 + LINGER_S + 2.0
    assert _all_gone(_pids(pids_file, 3)) == []


def test_ctrl_c_during_a_pulumi_call_ends_the_command_and_the_cli_s_tree(
    tmp_path, tree_script, monkeypatch
):
    """`dualstack status` asking a hung Pulumi CLI, interrupted: one line, exit 130, and the
    CLI, its plugin and its detached child are gone."""
    pids_file = _fake_pulumi(tmp_path, tree_script, "hang", monkeypatch)
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: dualstack-inference\nruntime: python\n")
    (project / "Pulumi.t.yaml").write_text(
        'config:\n  dualstack-inference:ascendWeight: "5"\n', encoding="utf-8"
    )
    command = [sys.executable, "-m", "dualstack", "-C", str(project), "status", "-s", "t"]
    process = spawn(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pids = _pids(pids_file, 3, within=30)
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=GONE_WITHIN_S)
    finally:
        stop(process)
    assert process.returncode == 130, err
    assert err.splitlines()[-1] == "error: interrupted"
    assert _all_gone(pids) == []
