"""The guard behind "no test reads the committed `Pulumi.<stack>.yaml` files" (issue 11).

A step pull request edits those files (prod 5 -> 20, committed), and `make test` is a required
check on it: a test that read them would fail on the very PRs the project exists for. Tests use
the fixture copies in `tests/fixtures/stacks/` instead (conftest: `git_repo`,
`copy_stack_files`, `fixture_config`, `project_copy`).

The guard is a Python audit hook (PEP 578, `sys.addaudithook`), armed by conftest for each test.
It sees, in the test process:
- every `open` event (`open`, `Path.read_text`, `shutil.copy`, ruamel, the CLI run in-process
  with `main(["-C", REPO, ...])`) of a `Pulumi.<stack>.yaml` in the repo root;
- every `subprocess.Popen` event whose project root (the value of `-C`/`--cwd`, else the
  working folder) is the repo or a folder inside it, when the command runs the CLI
  (`python -m dualstack`) or names a stack file (`git show HEAD:Pulumi.prod.yaml`).
It does not see what a child process opens by other means (a shell script's own `cat`).
A hit raises `CommittedStackRead` at the call and is recorded, so the test fails even when
the code under test catches the error and turns it into an exit code.

What it cannot see, it records: a child process started in the repo (a `make`, a `bash .ci/…`,
a `git` there) or naming a path inside it (outside `.venv`) may read the stack files by means of
its own. `opaque` lists such starts for the current test; conftest writes the ids of the tests
that had any to `$DUALSTACK_OPAQUE_TESTS`, and `.ci/suite-at-another-rung` runs exactly those
again with prod moved to another rung (every other test is covered by the guard itself).
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import sys
from pathlib import Path

# Pulumi.<stack>.yaml, not the project file Pulumi.yaml.
STACK_FILE = re.compile(r"Pulumi\.[^/\\]+\.ya?ml$")
RULE = (
    "tests must not read the committed stack files (a step PR changes them); "
    "use the fixtures in tests/fixtures/stacks (git_repo, copy_stack_files, fixture_config, "
    "project_copy from tests/conftest.py)"
)


OPAQUE_HERE = frozenset({"git", "make", "bash", "sh"})
"""Commands that read their working folder by themselves (a Makefile, a script, git's index)."""


class CommittedStackRead(RuntimeError):
    """A test read a committed `Pulumi.<stack>.yaml` (in-process or through a subprocess)."""


class Guard:
    """Audit hook refusing reads of the committed stack files of `repo` while armed."""

    def __init__(self, repo: Path) -> None:
        self.repo = os.path.realpath(repo)
        self.armed = False
        self.hits: list[str] = []
        self.opaque: list[str] = []

    def __call__(self, event: str, args: tuple) -> None:
        if event == "subprocess.Popen":
            self._note_opaque(args[1], args[2])
        if not self.armed:
            return
        try:
            if event == "open":
                self._check_open(args[0])
            elif event == "subprocess.Popen":
                self._check_popen(args[1], args[2])
        except CommittedStackRead:
            raise
        except Exception:  # an argument shape the guard does not know: not its business
            return

    def _refuse(self, what: str) -> None:
        self.hits.append(what)
        raise CommittedStackRead(f"{what}: {RULE}")

    def _check_open(self, path: object) -> None:
        if isinstance(path, int):
            return  # a file descriptor
        text = os.fsdecode(path)
        if STACK_FILE.search(os.path.basename(text)) is None:
            return
        if os.path.dirname(os.path.realpath(text)) == self.repo:
            self._refuse(f"open({text!r})")

    def _inside(self, folder: str) -> bool:
        real = os.path.realpath(folder)
        return real == self.repo or real.startswith(self.repo + os.sep)

    def _note_opaque(self, argv: object, cwd: object) -> None:
        try:
            tokens = _tokens(argv)
            workdir = _root(tokens, os.fsdecode(cwd) if cwd is not None else os.getcwd())
        except Exception:  # an argument shape the guard does not know: counted as opaque
            self.opaque.append(repr(argv))
            return
        venv = os.path.join(self.repo, ".venv") + os.sep
        named = [
            t
            for i, t in enumerate(tokens)
            if (i == 0 or tokens[i - 1] != "-m")  # a module name, not a path
            and os.path.exists(path := os.path.join(workdir, t))
            and self._inside(path)
            and not (os.path.realpath(path) + os.sep).startswith(venv)
        ]
        shell_here = os.path.basename(tokens[0]) in OPAQUE_HERE and self._inside(workdir)
        chosen = cwd is not None or workdir != os.getcwd()  # a cwd or -C of its own
        if named or shell_here or (chosen and self._inside(workdir)):
            self.opaque.append(shlex.join(tokens))
            if os.environ.get("DUALSTACK_OPAQUE_DEBUG"):
                print(f"opaque: {shlex.join(tokens)} in {workdir}", file=sys.stderr)

    def _check_popen(self, argv: object, cwd: object) -> None:
        tokens = _tokens(argv)
        root = _root(tokens, os.fsdecode(cwd) if cwd is not None else os.getcwd())
        if not self._inside(root):
            return
        runs_cli = os.path.basename(tokens[0]) == "dualstack" or any(
            a == "-m" and b == "dualstack" for a, b in itertools.pairwise(tokens)
        )
        names_stack = any(STACK_FILE.search(t) for t in tokens)
        if runs_cli or names_stack:
            self._refuse(f"subprocess {shlex.join(tokens)!r} in {root}")


def _tokens(argv: object) -> list[str]:
    if isinstance(argv, (str, bytes, os.PathLike)):
        return os.fsdecode(argv).split()
    return [os.fsdecode(a) for a in argv]  # type: ignore[union-attr]


def _root(tokens: list[str], workdir: str) -> str:
    """The folder a command works in: its `-C`/`--cwd` value (relative to `workdir`), else
    `workdir`."""
    for i, token in enumerate(tokens):
        if token in ("-C", "--cwd") and i + 1 < len(tokens):
            return os.path.join(workdir, tokens[i + 1])
        if token.startswith("--cwd="):
            return os.path.join(workdir, token[len("--cwd=") :])
    return workdir


_GUARD: Guard | None = None


def install(repo: Path) -> Guard:
    """The process's one guard for `repo` (audit hooks cannot be removed; installed once)."""
    global _GUARD
    if _GUARD is None:
        _GUARD = Guard(repo)
        sys.addaudithook(_GUARD)
    return _GUARD
