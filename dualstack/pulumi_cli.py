"""The one reader and writer of the Pulumi CLI: the deployed weight and `pulumi config set`.

Deployed state beats git history (REFERENCE.md: reverts and skipped deploys make git history
unreliable). The program exports `ascendWeight` (components/stack.py) as a number, so
`pulumi stack output ascendWeight --stack S --json` prints `5`. One parse rule
(`parse_weight`): a JSON integer 0..100 (`5`, or `5.0` as some backends print numbers);
anything else, the string `"5"` included, is not a weight.

Every call runs the CLI found on PATH in its own process group, bounded by `PULUMI_TIMEOUT_S`:
on a timeout the CLI and any plugin it started are killed together, so no child holds the
pipes open. Its backend login and passphrase come from the environment, as in any CI job.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

PULUMI_TIMEOUT_S = 120.0
"""Seconds one Pulumi CLI call may take (a backend login over a slow link included)."""

WEIGHT_OUTPUT = "ascendWeight"
"""The stack output (and config key) holding the Ascend weight in %."""


class StackOutputError(RuntimeError):
    """`pulumi stack output ascendWeight` failed or did not return a weight 0..100."""


class PulumiCliError(RuntimeError):
    """The Pulumi CLI is missing, timed out or exited non-zero; the message says which."""


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


def pulumi_cli(name: str = "pulumi") -> str | None:
    """Path of the `pulumi` executable on PATH, or None."""
    return shutil.which(name)


def run_pulumi(root: Path, *args: str, timeout: float = PULUMI_TIMEOUT_S) -> str:
    """Run `pulumi args...` in `root`; its stdout.

    Raises PulumiCliError when the CLI is not on PATH, gives no answer within `timeout`
    seconds (the whole process group is killed), or exits non-zero (git's style: the last
    line of its error output).
    """
    executable = pulumi_cli()
    command = f"`pulumi {' '.join(args[:3])}`"
    if executable is None:
        raise PulumiCliError("the pulumi CLI is not on PATH")
    try:
        process = subprocess.Popen(
            [executable, *args],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        raise PulumiCliError(f"could not run pulumi: {exc.strerror or exc}") from None
    with process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise PulumiCliError(f"{command} gave no answer within {timeout:g} s") from None
    if process.returncode != 0:
        why = (stderr.strip() or stdout.strip() or "no output").splitlines()[-1]
        raise PulumiCliError(f"{command} failed: {why}")
    return stdout


def parse_weight(text: str, source: str) -> int:
    """The weight in `text`: a JSON integer 0..100 (`5`, or `5.0`).

    Raises StackOutputError naming `source` for anything else: a string such as `"5"`, a
    boolean, a fraction, a value outside 0..100, or text that is not JSON.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not float(value).is_integer() or not 0 <= value <= 100:
        shown = text.strip()[:40]
        raise StackOutputError(f"{source} returned {shown!r}, not a weight 0..100")
    return int(value)


def read_deployed_weight(root: Path, stack: str, timeout: float = PULUMI_TIMEOUT_S) -> int:
    """The deployed Ascend weight in %: `pulumi stack output ascendWeight --json --stack STACK`.

    Raises StackOutputError when the CLI is missing, fails (e.g. a stack never deployed:
    use `--first-deploy`), times out after `timeout` seconds, or returns something that is
    not a weight (see `parse_weight`).
    """
    command = f"`pulumi stack output {WEIGHT_OUTPUT} --stack {stack}`"
    try:
        stdout = run_pulumi(
            root, "stack", "output", WEIGHT_OUTPUT, "--json", "--stack", stack, timeout=timeout
        )
    except PulumiCliError as exc:
        if pulumi_cli() is None:
            raise StackOutputError(
                "the Pulumi CLI (pulumi) is not on PATH; pass --previous-weight N instead"
            ) from None
        message = str(exc).replace(f"`pulumi stack output {WEIGHT_OUTPUT}`", command)
        if "failed:" in message:
            message += " (a stack never deployed has no output: use --first-deploy)"
        raise StackOutputError(message) from None
    return parse_weight(stdout, command)


def deployed_weight(root: Path, stack: str, timeout: float = PULUMI_TIMEOUT_S) -> Deployed:
    """`read_deployed_weight` for reports; never raises.

    Unknown (weight None) when the CLI is missing (`failed` False), or when it fails, times
    out or prints no weight (`failed` True, with the reason in `note`).
    """
    if pulumi_cli() is None:
        return Deployed(None, "the pulumi CLI is not installed, so no backend was asked")
    try:
        return Deployed(read_deployed_weight(root, stack, timeout))
    except StackOutputError as exc:
        return Deployed(None, str(exc), failed=True)


def config_set(root: Path, stack: str, key: str, value: str) -> str | None:
    """Run `pulumi config set KEY VALUE --stack STACK`; None on success, else the reason."""
    try:
        run_pulumi(root, "config", "set", key, value, "--stack", stack)
    except PulumiCliError as exc:
        if pulumi_cli() is None:
            return "the pulumi CLI is not installed"
        return str(exc)
    return None
