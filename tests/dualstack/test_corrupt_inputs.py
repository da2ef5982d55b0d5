"""Corrupted files and hostile write targets against the CLI, one table per class (issue 34's
second half: nothing lost, nothing hung, nothing passed on bad data).

Every case runs `dualstack.cli.main` in-process on a throwaway git repo holding a fixture stack
(never a committed `Pulumi.<stack>.yaml`). A corrupted stack file is read by `status -s t
--json` and, when it must be refused, also by `rollback -s t --to 0` (the write path): the
outcome is exit 2 with one `error:` line per cause and no traceback, or, for a file that is still a
valid (shorter) stack, exit 0 reporting the fixture's own weight, 20, never another one. No
case changes a file of the repo. A write target is given to `policy-config --output`: a case
is written whole or refused in one line, and never hangs (a FIFO without a reader).

The whole second half of issue 34, by class; `test_the_table_counts_what_the_modules_hold`
keeps the numbers equal to the tables (this module's) and to what pytest collects (the others;
for the kill loops, the kills):

| class | cases | where |
| --- | ---: | --- |
| truncated stack file, at every byte offset of the fixture | 251 | `TRUNCATED` |
| NUL byte inside a stack file, every 10th offset | 26 | `NULS` |
| wrong encoding: UTF-16/32, Latin-1, CP1252, Shift-JIS, GB18030, EBCDIC, ... | 15 | `ENCODINGS` |
| huge or not regular: 1 MiB + 1, sparse 8 GiB, FIFO, /dev/zero, 100k keys, ... | 10 | `HUGE` |
| binary garbage, alone or after `config:` | 24 | `GARBAGE` |
| broken structure: duplicate keys, tabs, two documents, CR-only, ... | 14 | `STRUCTURE` |
| hostile write target: folder, /dev/full, FIFO nobody reads, symlink loop, ... | 14 | `TARGETS` |
| `kill -9` of a writer at a random moment: 2 loops of 60, a control of 12 | 132 | atomic (1) |
| other write faults: `ulimit -f`, targets, modes, line breaks (CR, mixed, ...) | 22 | atomic (1) |
| repo lock: held, bounded wait, kill -9, bad wait values, races, index.lock | 19 | lock (2) |
| child processes: hung, lingering grandchild, hooks, Pulumi, Ctrl-C, SIGTERM | 9 | processes (3) |
| `policy-config` output: `-o` values, `--output` mode, symlink, `ulimit -f` | 12 | output (4) |
| `verify-precision` below (and at) the evidence minimums | 16 | minimums (5) |
| total | 564 | |

(1) repo/test_atomic_writes.py (2) repo/test_repo_lock.py (3) test_processes.py
(4) commands/test_policy_config_output.py (5) commands/test_verify_minimums.py

Before this work, measured on main at dc03452 with the same fixtures: 47 of 60 `kill -9`s of
the stack-file edit left a file that was neither the old nor the new one (0 bytes, then the
next edit rewrote the empty file as a 49-byte stack); `ulimit -f` left a rollback's stack
file at 65,536 of its 115,612 bytes; a held `.git/index.lock` left `rollback --commit`'s edit
in the file; a hung pre-commit hook: git returned at its bound, the hook and its child kept
running (2 orphans); `policy-config -o json` wrote a file named `json`; a check of one prompt
with `--max-tokens 1` was recorded as evidence. Of this module's tables the corrupted stack
files already held (the bounded reads of issue 34's first half: here they guard against a
regression of the new writer), and 2 of the 14 write targets failed (a FIFO nobody reads hung
the command; a dead writer's temporary file stayed). Now every table above passes: 0
tracebacks, 0 wrong acceptances, 0 hangs past a bound, 0 corrupted files, 0 processes left.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dualstack.cli import main
from tests.conftest import REPO, git

STACK = "t"
GOOD = (
    "# corrupt-file table fixture\n"
    "config:\n"
    '  dualstack-inference:ascendWeight: "20"\n'
    "  dualstack-inference:namespace: inference-test\n"
    "  dualstack-inference:capacity:\n"
    "    totalReplicas: 4\n"
    "    headroom: 1.2\n"
    "  dualstack-inference:ladder: [0, 5, 20, 50, 80, 100]\n"
)
GOOD_BYTES = GOOD.encode()
WEIGHT = 20
REFUSED = "refused"
"""Expected: exit 2, one `error:` line (status and rollback)."""
READ = "read"
"""Expected: refused, or read as a valid stack holding the fixture's weight (20)."""


# --- the tables ------------------------------------------------------------------------------

TRUNCATED: dict[str, tuple[bytes, str]] = {
    f"truncated-at-{n}": (GOOD_BYTES[:n], READ) for n in range(len(GOOD_BYTES))
}
NULS: dict[str, tuple[bytes, str]] = {
    f"nul-at-{n}": (GOOD_BYTES[:n] + b"\0" + GOOD_BYTES[n:], REFUSED)
    for n in range(0, len(GOOD_BYTES), 10)
}
ENCODINGS: dict[str, tuple[bytes, str]] = {
    "utf-16 with BOM": (GOOD.encode("utf-16"), REFUSED),
    "utf-16-le": (GOOD.encode("utf-16-le"), REFUSED),
    "utf-16-be": (GOOD.encode("utf-16-be"), REFUSED),
    "utf-32": (GOOD.encode("utf-32"), REFUSED),
    "latin-1 comment": (("# café\n" + GOOD).encode("latin-1"), REFUSED),
    "cp1252 quotes": (GOOD.replace('"20"', "\u201c20\u201d").encode("cp1252"), REFUSED),
    "shift-jis comment": (("# 設定ファイル\n" + GOOD).encode("shift_jis"), REFUSED),
    "gb18030 comment": (("# 配置文件\n" + GOOD).encode("gb18030"), REFUSED),
    "ebcdic": (GOOD.encode("cp500"), REFUSED),
    "overlong utf-8": (GOOD_BYTES.replace(b"# corrupt", b"# \xc0\xafcorrupt"), REFUSED),
    "utf-8 surrogate": (GOOD_BYTES.replace(b"# corrupt", b"# \xed\xa0\x80corrupt"), REFUSED),
    "cut multibyte at the end": (GOOD_BYTES + b"# \xe2\x82", REFUSED),
    "lone continuation byte": (GOOD_BYTES.replace(b'"20"', b'"2\x800"'), REFUSED),
    "two BOMs": (b"\xef\xbb\xbf\xef\xbb\xbf" + GOOD_BYTES, READ),
    "utf-8 NEL as line break": (GOOD.replace("\n", "\u0085", 3).encode(), READ),
}
HUGE: dict[str, tuple[bytes | str, str]] = {
    "1 MiB + 1 byte": (GOOD_BYTES + b"#" * (1024 * 1024 - len(GOOD_BYTES) + 1), REFUSED),
    "exactly 1 MiB": (GOOD_BYTES + b"#" * (1024 * 1024 - len(GOOD_BYTES)), READ),
    "sparse 8 GiB": ("sparse", REFUSED),
    "a FIFO": ("fifo", REFUSED),
    "a symlink to /dev/zero": ("dev-zero", REFUSED),
    "a folder": ("folder", REFUSED),
    "flow nesting 20000 deep": (GOOD_BYTES + b"  x: " + b"[" * 20000 + b"]" * 20000, REFUSED),
    "mapping nesting 400 deep": (
        GOOD_BYTES + "".join(f"{'  ' * (i + 1)}k{i}:\n" for i in range(400)).encode(),
        REFUSED,
    ),
    "100001 keys": (
        GOOD_BYTES
        + b"  dualstack-inference:bulk:\n"
        + b"".join(b"    k%d: 1\n" % i for i in range(100_001)),
        REFUSED,
    ),
    "900 KB comment line": (GOOD_BYTES + b"#" + b"x" * 900_000 + b"\n", READ),
}
GARBAGE: dict[str, tuple[bytes, str]] = {
    **{f"random-{i}": (random.Random(i).randbytes(64 + 37 * i), REFUSED) for i in range(12)},
    **{
        f"config-then-random-{i}": (b"config:\n" + random.Random(100 + i).randbytes(200), REFUSED)
        for i in range(12)
    },
}
STRUCTURE: dict[str, tuple[bytes, str]] = {
    "tab indent": (
        GOOD_BYTES.replace(
            b"  dualstack-inference:ascendWeight", b"\tdualstack-inference:ascendWeight"
        ),
        REFUSED,
    ),
    "duplicate weight key": (GOOD_BYTES + b'  dualstack-inference:ascendWeight: "50"\n', REFUSED),
    "duplicate config": (GOOD_BYTES + b"config:\n  dualstack-inference:namespace: x\n", REFUSED),
    "two documents": (GOOD_BYTES + b"---\nconfig: {}\n", REFUSED),
    "unterminated quote": (GOOD_BYTES.replace(b'"20"', b'"20'), REFUSED),
    "unterminated flow": (GOOD_BYTES.replace(b"100]", b"100"), REFUSED),
    "weight split by a CR": (GOOD_BYTES.replace(b'"20"', b'"2\r0"'), REFUSED),
    "stray colon in the key": (GOOD_BYTES.replace(b"ascendWeight:", b"ascend:Weight:"), REFUSED),
    "CR-only line breaks": (GOOD_BYTES.replace(b"\n", b"\r"), READ),
    "CRLF line breaks": (GOOD_BYTES.replace(b"\n", b"\r\n"), READ),
    "mixed line breaks": (GOOD_BYTES.replace(b"\n", b"\r\n", 2).replace(b"\n", b"\r", 2), READ),
    "BOM and CRLF": (b"\xef\xbb\xbf" + GOOD_BYTES.replace(b"\n", b"\r\n"), READ),
    "document end marker then junk": (GOOD_BYTES + b"...\n@@@ junk\n", REFUSED),
    "directive after content": (GOOD_BYTES + b"%YAML 1.2\n", REFUSED),
}
CORRUPT = {**TRUNCATED, **NULS, **ENCODINGS, **HUGE, **GARBAGE, **STRUCTURE}


# --- harness ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("corrupt") / "gitops"
    repo.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", repo / "Pulumi.yaml")
    (repo / f"Pulumi.{STACK}.yaml").write_bytes(GOOD_BYTES)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "fixture stack")
    return repo


@pytest.fixture
def repo(template_repo: Path) -> Iterator[Path]:
    yield template_repo
    path = template_repo / f"Pulumi.{STACK}.yaml"
    if path.is_dir() and not path.is_symlink():
        path.rmdir()
    else:
        path.unlink(missing_ok=True)
    path.write_bytes(GOOD_BYTES)
    for other in template_repo.iterdir():
        if other.name not in (".git", "Pulumi.yaml", path.name):
            shutil.rmtree(other) if other.is_dir() else other.unlink()
    git(template_repo, "checkout", "-q", "main")


@pytest.fixture
def cli(capsys, monkeypatch) -> Callable[..., tuple[int, str, str]]:
    monkeypatch.delenv("DUALSTACK_PROMETHEUS_URL", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no pulumi CLI: nothing asks a backend

    def run(root: Path, *args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["-C", str(root), *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry of the repo outside .git: a file's bytes (at most 2 MiB of them), else
    what it is (a link's target, `fifo`, `folder`)."""
    found: dict[str, bytes | str] = {}
    for entry in sorted(root.iterdir()):
        if entry.name == ".git":
            continue
        mode = entry.lstat().st_mode
        if stat.S_ISLNK(mode):
            found[entry.name] = f"link to {os.readlink(entry)}"
        elif stat.S_ISREG(mode):
            found[entry.name] = (entry.stat().st_size, entry.open("rb").read(2 * 1024 * 1024))
        else:
            found[entry.name] = "fifo" if stat.S_ISFIFO(mode) else "folder"
    return found


def _place(root: Path, content: bytes | str) -> None:
    path = root / f"Pulumi.{STACK}.yaml"
    path.unlink()
    if content == "sparse":
        with path.open("wb") as out:
            out.write(GOOD_BYTES)
            out.truncate(8 * 1024**3)
    elif content == "fifo":
        os.mkfifo(path)
    elif content == "dev-zero":
        path.symlink_to("/dev/zero")
    elif content == "folder":
        path.mkdir()
    else:
        path.write_bytes(content)


@contextmanager
def bounded(seconds: int, what: str) -> Iterator[None]:
    """Fail the test with `what` when the block runs longer than `seconds` (SIGALRM in the
    main thread, where the CLI must run: Pulumi's mocks are per-thread)."""

    def expired(_signum, _frame):
        raise AssertionError(what)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _one_line(code: int, err: str) -> None:
    assert code == 2, (code, err[-400:])
    assert "Traceback" not in err
    lines = err.splitlines()
    assert 1 <= len(lines) <= 5, err[-600:]  # one line per cause (a bad key each)
    assert all(line.startswith("error: ") and len(line) < 1200 for line in lines), err[-600:]


# --- corrupted stack files ---------------------------------------------------------------------


@pytest.mark.parametrize("name", CORRUPT)
def test_a_corrupted_stack_file_is_refused_or_read_as_it_says(repo, cli, name):
    content, expected = CORRUPT[name]
    _place(repo, content)
    before = _snapshot(repo)
    with bounded(30, "status hung on the file"):
        code, out, err = cli(repo, "status", "-s", STACK, "--json")
    if code == 0:
        assert expected == READ, (code, err)
        (entry,) = json.loads(out)["stacks"]
        assert entry["ascendWeight"] == WEIGHT, entry
        assert "Traceback" not in err
    else:
        _one_line(code, err)
        assert err.startswith(f"error: stack {STACK}: ") or "no stack file" in err, err
    assert _snapshot(repo) == before
    if expected == REFUSED:
        assert code == 2
        code, out, err = cli(repo, "rollback", "-s", STACK, "--to", "0")
        _one_line(code, err)
        assert out == ""
        assert _snapshot(repo) == before


# --- hostile write targets -------------------------------------------------------------------


def _target(tmp: Path, kind: str) -> tuple[Path, Callable[[], None] | None]:
    """A target of `kind` under `tmp`, and what to start before the write (a FIFO's reader)."""
    if kind == "folder":
        (tmp / "out.json").mkdir()
    elif kind == "file-as-folder":
        (tmp / "plain").write_text("x")
        return tmp / "plain" / "out.json", None
    elif kind == "missing-folder":
        return tmp / "missing" / "out.json", None
    elif kind in ("fifo-no-reader", "fifo-reader"):
        os.mkfifo(tmp / "out.json")
        if kind == "fifo-reader":

            def read() -> None:
                subprocess.run(["cat", str(tmp / "out.json")], capture_output=True, timeout=60)

            return tmp / "out.json", read
    elif kind == "dev-full":
        return Path("/dev/full"), None
    elif kind == "dev-null":
        return Path("/dev/null"), None
    elif kind == "symlink":
        (tmp / "real.json").write_text("{}")
        (tmp / "out.json").symlink_to(tmp / "real.json")
    elif kind == "dangling-symlink":
        (tmp / "out.json").symlink_to(tmp / "created.json")
    elif kind == "symlink-loop":
        (tmp / "out.json").symlink_to(tmp / "out.json")
    elif kind == "read-only-file":
        (tmp / "out.json").write_text("{}")
        (tmp / "out.json").chmod(0o444)
    elif kind == "newline-in-name":
        return tmp / "out\nput.json", None
    elif kind == "name-too-long":
        return tmp / ("x" * 300 + ".json"), None
    elif kind == "stale-temp-of-a-dead-writer":
        (tmp / "out.json").write_text("{}")
        (tmp / ".out.json.999999999.dead.tmp").write_text("torn")
    return tmp / "out.json", None


ROOT = os.geteuid() == 0
TARGETS: dict[str, tuple[str, str]] = {
    "a folder": ("folder", "is a folder, expected a file name"),
    "a file as the folder": ("file-as-folder", "is not a folder"),
    "a missing folder": ("missing-folder", "does not exist"),
    "a FIFO nobody reads": ("fifo-no-reader", "no process opened this FIFO for reading"),
    "a FIFO with a reader": ("fifo-reader", ""),
    "/dev/full": ("dev-full", "No space left on device"),
    "/dev/null": ("dev-null", ""),
    "a symlink to a file": ("symlink", ""),
    "a dangling symlink": ("dangling-symlink", ""),
    "a symlink loop": ("symlink-loop", "Too many levels of symbolic links"),
    "a read-only file": ("read-only-file", "" if ROOT else "the file is not writable"),
    "a newline in the name": ("newline-in-name", ""),
    "a 300-character name": ("name-too-long", "File name too long"),
    "a dead writer's temporary file": ("stale-temp-of-a-dead-writer", ""),
}


@pytest.mark.parametrize("name", TARGETS)
def test_a_write_target_is_written_whole_or_refused_in_one_line(project_copy, tmp_path, cli, name):
    kind, refusal = TARGETS[name]
    target, start = _target(tmp_path, kind)
    reader = threading.Thread(target=start, daemon=True) if start else None
    if reader:
        reader.start()
    argv = ["policy-config", "-s", "prod", "--previous-weight", "5", "--base", "HEAD"]
    with bounded(60, "the write hung"):
        code, _out, err = cli(project_copy, *argv, "--output", str(target))
    if reader:
        reader.join(timeout=30)
    if refusal:
        _one_line(code, err)
        assert refusal in err, err
        assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
        return
    assert code == 0, err
    if kind in ("symlink", "dangling-symlink"):
        assert target.is_symlink()
        assert "no-unsafe-weight-jump" in json.loads(target.resolve().read_text())
    elif stat.S_ISREG(os.stat(target).st_mode):
        assert "no-unsafe-weight-jump" in json.loads(target.read_text())
    if kind == "read-only-file":
        assert stat.S_IMODE(target.stat().st_mode) == 0o444
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


# --- the table itself ------------------------------------------------------------------------


def test_the_table_counts_what_the_modules_hold():
    from tests.dualstack.repo.test_atomic_writes import KILLS

    modules = {
        "atomic": "tests/dualstack/repo/test_atomic_writes.py",
        "lock": "tests/dualstack/repo/test_repo_lock.py",
        "processes": "tests/dualstack/test_processes.py",
        "output": "tests/dualstack/commands/test_policy_config_output.py",
        "minimums": "tests/dualstack/commands/test_verify_minimums.py",
    }
    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:randomly",
            *modules.values(),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    collected = {
        name: sum(line.startswith(f"{path}::") for line in listed) for name, path in modules.items()
    }
    kill_loops = sum("::test_kill_9_" in line or "::test_the_kill_loop" in line for line in listed)
    counts = [
        len(TRUNCATED),
        len(NULS),
        len(ENCODINGS),
        len(HUGE),
        len(GARBAGE),
        len(STRUCTURE),
        len(TARGETS),
        2 * KILLS + 12,
        collected["atomic"] - kill_loops,
        collected["lock"],
        collected["processes"],
        collected["output"],
        collected["minimums"],
    ]
    rows = [
        line.split("|")[2].strip()
        for line in (__doc__ or "").splitlines()
        if line.startswith("| ") and not line.startswith(("| class", "| ---"))
    ]
    *table, total = (int(cell) for cell in rows)
    assert kill_loops == 3
    assert table == counts
    assert total == sum(counts) >= 300
