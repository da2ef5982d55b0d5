"""The weight a stack actually runs with, read from its Pulumi backend when one is reachable.

Deployed state beats git history (REFERENCE.md: reverts and skipped deploys make git history
unreliable). The program exports `ascendWeight` (components/stack.py), so
`pulumi stack output ascendWeight --stack S --json` prints it. Without the Pulumi CLI, or
without a logged-in backend, the deployed weight is unknown: that is reported, never guessed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

PULUMI_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Deployed:
    """The deployed Ascend weight (%), or None with `note` saying why it is unknown.

    `failed` tells the two unknowns apart: False when no backend was asked (no CLI on PATH),
    True when the CLI was there but gave no weight (error, timeout, garbage). A guard that
    must fail closed refuses on `failed`; status reports merely show the note.
    """

    weight: int | None
    note: str = ""
    failed: bool = False

    def compare(self, git_weight: int) -> str:
        """`in sync (5%)`, `DIFFERS: deployed 5%, git 20%` or `unknown: <why>`."""
        if self.weight is None:
            return f"unknown: {self.note}"
        if self.weight == git_weight:
            return f"in sync ({self.weight}%)"
        return f"DIFFERS: deployed {self.weight}%, git {git_weight}%"


def pulumi_cli() -> str | None:
    """Path of the `pulumi` executable on PATH, or None."""
    return shutil.which("pulumi")


def deployed_weight(root: Path, stack: str, timeout: float = PULUMI_TIMEOUT_S) -> Deployed:
    """Ask the stack's backend for its `ascendWeight` output; never raises.

    Unknown (weight None) when the CLI is missing (`failed` False), or when it fails, times
    out or prints no integer 0..100 (`failed` True).
    """
    cli = pulumi_cli()
    if cli is None:
        return Deployed(None, "the pulumi CLI is not installed, so no backend was asked")
    try:
        done = subprocess.run(
            [cli, "stack", "output", "ascendWeight", "--stack", stack, "--json"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return _failed(f"`pulumi stack output` gave no answer within {timeout:g} s")
    except OSError as exc:
        return _failed(f"could not run pulumi: {exc.strerror or exc}")
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        return _failed(f"pulumi stack output failed: {first}")
    try:
        value = json.loads(done.stdout)
    except ValueError:
        return _failed(f"pulumi printed {done.stdout.strip()[:40]!r}, not JSON")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
        return _failed(f"the deployed ascendWeight output is {value!r}, not 0..100")
    return Deployed(value)


def _failed(note: str) -> Deployed:
    return Deployed(None, note, failed=True)
