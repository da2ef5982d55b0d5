"""Servers started by tests die with the test process, even on SIGKILL (issue 34): a pytest
child starts one through the project's fixtures, writes its pid, and is killed with `kill
-9`; the server must be gone within a few seconds (`tests.support.bounded_process`)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

GONE_WITHIN_S = 5.0
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly")
STARTS = {
    "pushgateway": (
        "prometheus-pushgateway",
        "from tests.support.pushgateway_server import pushgateway_server\n"
        "server = pushgateway_server()\n"
        "_url, pid = server.__enter__()\n",
    ),
    "prometheus": (
        "prometheus",
        "from contextlib import ExitStack\n"
        "from tests.support.prometheus_server import prometheus_server\n"
        "import subprocess\n"
        "(tmp_path / 'tsdb').mkdir()\n"
        "server = prometheus_server(tmp_path / 'tsdb', tmp_path)\n"
        "server.__enter__()\n"
        "pid = next(int(p) for p in subprocess.check_output(\n"
        "    ['pgrep', '-P', str(os.getpid()), 'prometheus']).split())\n",
    ),
    "any-spawned-child": (
        "sleep",
        "from tests.support.bounded_process import spawn\npid = spawn(['sleep', '300']).pid\n",
    ),
}


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, killed but not yet reaped, has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("kind", STARTS)
def test_a_server_dies_with_a_killed_pytest(tmp_path, kind):
    binary, start = STARTS[kind]
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} not installed (make tools)")
    pid_file = tmp_path / "server.pid"
    body = "".join(f"    {line}\n" for line in start.splitlines())
    (tmp_path / "test_child.py").write_text(
        "import os, time\n\n"
        "def test_start(tmp_path):\n"
        f"{body}"
        f"    open({str(pid_file)!r}, 'w').write(str(pid))\n"
        "    time.sleep(120)\n",
        encoding="utf-8",
    )
    child = subprocess.Popen(
        [*PYTEST, "--basetemp", str(tmp_path / "child"), str(tmp_path / "test_child.py")],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()):
            assert child.poll() is None, "the child pytest ended before starting its server"
            assert time.monotonic() < deadline, "the child pytest did not start its server"
            time.sleep(0.1)
        server = int(pid_file.read_text())
        assert _alive(server)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        gone = time.monotonic() + GONE_WITHIN_S
        while _alive(server) and time.monotonic() < gone:
            time.sleep(0.05)
        left = _alive(server)
        if left:
            os.kill(server, signal.SIGKILL)  # leave nothing behind whatever the verdict
        assert not left, f"{kind} (pid {server}) outlived the killed pytest"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
