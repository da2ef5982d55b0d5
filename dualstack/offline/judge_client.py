"""Asking the BASE's code to judge: `base_judge()` for `preview --base` and `policy-config --base`.

The base's code runs in a temporary `git worktree` of the base commit, as `python -m dualstack
-C <worktree> ci judge --stack S --protocol 1` with the same interpreter and the worktree alone
on `PYTHONPATH`, so every module it imports is the base's (`dualstack.offline.judge`). It is
started before the caller renders the head and renders the base meanwhile; the head's config
and objects then go to it as JSON on stdin. When the running code is byte for byte the base's
(`dualstack.offline.code_identity`), the judge runs in-process instead: the same code.

The base's judge keeps its render by commit (`dualstack.offline.base_cache`), so the next
preview against the same base skips it. Fail closed: a base whose code lacks the protocol,
cannot render its own stack or answers anything but a protocol-1 response raises JudgeError
(exit 2), never a first deploy.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dualstack.offline.child_process import Child
from dualstack.offline.code_identity import running_code_is
from dualstack.offline.protocol import PROTOCOL, JudgeError, JudgeRequest, Verdict
from dualstack.processes import OutputTooLarge, Timeout, run_bounded, universal_text
from dualstack.repo.baseref import describe
from dualstack.repo.git import git, is_commit
from dualstack.repo.worktree import temporary_worktree

JUDGE_TIMEOUT_S = 300.0
"""Seconds the base's judge may take (its render, the pack over the head's objects)."""

CLI_TIMEOUT_S = 900.0
"""Seconds the base's own CLI may take for a whole `preview --head` (every stack)."""


class BaseJudge:
    """The base's code, ready to judge: `submit(request)` hands the head over (and returns at
    once), `answer()` is the base's verdict; `where` says where the code runs."""

    def __init__(
        self,
        where: str,
        submit: Callable[[JudgeRequest], None],
        answer: Callable[[], Verdict],
    ) -> None:
        self.where = where
        self.submit = submit
        self.answer = answer

    def send(self, request: JudgeRequest) -> Verdict:
        """`submit` then `answer`."""
        self.submit(request)
        return self.answer()


NO_PROTOCOL_SIGNS = ("invalid choice: 'judge'", "No module named", "unrecognized arguments")


@dataclass(frozen=True)
class BaseRef:
    """A resolved base: the ref as given, its commit id and how messages name it."""

    ref: str
    commit: str
    label: str


def resolve_base(root: Path, ref: str) -> BaseRef:
    """`ref` resolved to a commit. Raises StackFileError when it is not a commit of `root`."""
    if not is_commit(root, ref):
        from dualstack.repo.stackfile import StackFileError

        raise StackFileError(f"git ref {ref!r} is not a commit in {root}")
    commit = git(root, "rev-parse", "--verify", f"{ref}^{{commit}}").strip()
    return BaseRef(ref, commit, describe(root, ref))


def code_env(tree: Path) -> dict[str, str]:
    """The environment with `tree` alone on PYTHONPATH: its packages beat any installed, and
    nothing of the caller's PYTHONPATH is importable (run from a head, that holds the head's
    tree, whose root-level modules would shadow the libraries the base's judge imports)."""
    return {**os.environ, "PYTHONPATH": str(tree)}


def error_line(stderr: str) -> str:
    """The child's first `error:` line without the prefix, else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line.removeprefix("error:").strip() for line in lines if line.startswith("error:")]
    return errors[0] if errors else (lines[-1] if lines else "no output")


def _answer(code: int, out: str, err: str, label: str, stack: str) -> Verdict:
    if code != 0:
        if any(sign in err for sign in NO_PROTOCOL_SIGNS):
            raise JudgeError(
                f"the base's code at {label} has no judge protocol {PROTOCOL} (`dualstack ci "
                f"judge`), so it cannot judge this change (fail closed; a first deploy applies "
                f"only when Pulumi.{stack}.yaml is absent at the base): {error_line(err)}"
            )
        raise JudgeError(f"the base at {label} could not judge: {error_line(err)}")
    try:
        response = json.loads(out)
    except json.JSONDecodeError:
        raise JudgeError(f"the base's judge at {label} answered no JSON") from None
    if not isinstance(response, dict) or response.get("protocol") != PROTOCOL:
        got = response.get("protocol") if isinstance(response, dict) else None
        raise JudgeError(f"the base's judge at {label} answered protocol {got!r}, not {PROTOCOL}")
    try:
        return Verdict.from_wire(response)
    except JudgeError as exc:
        raise JudgeError(f"the base's judge at {label} answered a malformed {exc}") from None


def cache_dir(root: Path) -> Path:
    """Where the base's judge keeps its renders: `<git common dir>/dualstack/judge-cache`."""
    common = Path(git(root, "rev-parse", "--git-common-dir").strip())
    return (
        (common if common.is_absolute() else root / common).resolve()
        / "dualstack"
        / ("judge-cache")
    )


@contextmanager
def base_judge(root: Path, base: BaseRef, stack: str) -> Iterator[BaseJudge]:
    """A judge made of the base's code for `stack`, started at once (it renders the base
    while the caller renders the head; this module imports nothing heavy, so call it before
    importing the program). Raises JudgeError, StackFileError or GitError."""
    if running_code_is(root, base.commit):
        from dualstack.offline.judge import cached_base, judge
        from dualstack.repo.stackfile import read_config_at

        side = cached_base(
            cache_dir(root), base.commit, stack, read_config_at(root, stack, base.commit)
        )
        given: list[JudgeRequest] = []
        yield BaseJudge(
            "in-process: the running code is the base's, file for file",
            given.append,
            lambda: judge(side, given[-1]),
        )
        return
    with temporary_worktree(root, base.commit, "dualstack-base-") as tree:
        argv = [sys.executable, "-m", "dualstack", "-C", str(tree), "ci", "judge"]
        argv += ["--stack", stack, "--protocol", str(PROTOCOL), "--cache", str(cache_dir(root))]
        child = Child(argv, tree, code_env(tree))
        what = f"the base's judge at {base.label}"

        def answer() -> Verdict:
            code, out, err = child.finish(JUDGE_TIMEOUT_S, what)
            return _answer(code, out, err, base.label, stack)

        try:
            yield BaseJudge(
                "the base's code in a temporary worktree",
                lambda request: child.send(json.dumps(request.to_wire())),
                answer,
            )
        finally:
            child.stop()


def run_base_cli(root: Path, base: BaseRef, argv: list[str]) -> int:
    """Run the BASE's own CLI, `python -m dualstack -C <worktree of base> ARGV`, in a
    temporary worktree of `base` with that worktree alone on PYTHONPATH (`code_env`), and
    return its exit code: what it printed is passed on as it is, and no code of the caller
    reads or decides the verdict (`preview --base`: a head whose own preview exits 0 whatever
    the verdict decides nothing). Exit 2 with one line when it does not finish in
    `CLI_TIMEOUT_S`. Raises GitError when the worktree cannot be made."""
    with temporary_worktree(root, base.commit, "dualstack-base-") as tree:
        command = [sys.executable, "-m", "dualstack", "-C", str(tree), *argv]
        try:
            done = run_bounded(command, timeout=CLI_TIMEOUT_S, cwd=tree, env=code_env(tree))
        except (Timeout, OutputTooLarge) as exc:
            why = f"did not finish within {CLI_TIMEOUT_S:g} s" if isinstance(exc, Timeout) else exc
            print(f"error: the base's CLI at {base.label} {why}", file=sys.stderr)
            return 2
    sys.stdout.write(universal_text(done.stdout, errors="replace"))
    sys.stderr.write(universal_text(done.stderr, errors="replace"))
    return done.returncode
