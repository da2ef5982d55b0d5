"""The one reader and writer of the Pulumi CLI: the deployed weight and `pulumi config set`.

Deployed state beats git history (REFERENCE.md: reverts and skipped deploys make git history
unreliable). The program exports `ascendWeight` (components/stack.py) as a number, so
`pulumi stack output ascendWeight --stack S --json` prints `5`. A fleet stack (`services`)
exports `services` instead, `{"chat": {"ascendWeight": 50, ...}, ...}`, read with `pulumi
stack output services --json` (`read_deployed_weights`). One parse rule (`parse_weight`): a
JSON integer 0..100 (`5`, or `5.0` as some backends print numbers); anything else, the string
`"5"` included, is not a weight.

Every call runs the CLI found on PATH in its own process group, bounded by `PULUMI_TIMEOUT_S`
(`dualstack.processes.run_bounded`): on a timeout or Ctrl-C the CLI, any plugin it started and
any detached child still holding its output are killed together, so nothing holds the pipes
open or outlives the command. Output that is not UTF-8 is read with replacement characters
(never a traceback; it is no weight either). Its backend login and passphrase come from the
environment, as in any CI job; its stdin is /dev/null, so a prompt fails instead of waiting.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dualstack.processes import OutputTooLarge, Timeout, run_bounded, universal_text

if TYPE_CHECKING:  # the CLI's every verb imports this module: no pydantic at import time
    from components.settings import Fleet

PULUMI_TIMEOUT_S = 120.0
"""Seconds one Pulumi CLI call may take (a backend login over a slow link included)."""

WEIGHT_OUTPUT = "ascendWeight"
"""The stack output (and config key) holding the Ascend weight in %."""
SERVICES_OUTPUT = "services"
"""A fleet stack's output: {service: {ascendWeight, ladderPosition, ...}}."""


class StackOutputError(RuntimeError):
    """`pulumi stack output ascendWeight` (or `services`) failed or did not return weights
    0..100."""


class PulumiCliError(RuntimeError):
    """The Pulumi CLI is missing, timed out or exited non-zero; the message says which."""


class PulumiExitError(PulumiCliError):
    """The Pulumi CLI answered, exiting non-zero (for `stack output NAME`: among others, a
    stack that exports no output NAME)."""


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
    seconds (the whole tree is killed, `run_bounded`), or exits non-zero (git's style: the last
    line of its error output).
    """
    executable = pulumi_cli()
    command = f"`pulumi {' '.join(args[:3])}`"
    if executable is None:
        raise PulumiCliError("the pulumi CLI is not on PATH")
    try:
        done = run_bounded([executable, *args], timeout=timeout, cwd=root)
    except Timeout:
        raise PulumiCliError(f"{command} gave no answer within {timeout:g} s") from None
    except OutputTooLarge as exc:
        raise PulumiCliError(f"{command}: {exc}") from None
    except OSError as exc:
        raise PulumiCliError(f"could not run pulumi: {exc.strerror or exc}") from None
    stdout = universal_text(done.stdout, errors="replace")
    stderr = universal_text(done.stderr, errors="replace")
    if done.returncode != 0:
        why = (stderr.strip() or stdout.strip() or "no output").splitlines()[-1]
        raise PulumiExitError(f"{command} failed: {why}")
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


def parse_weights(text: str, source: str) -> dict[str, int]:
    """{service: weight} from a fleet's `services` output: a JSON object whose every value is
    an object holding `ascendWeight` as `parse_weight` reads it.

    Raises StackOutputError naming `source` (and the service) for anything else.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        shown = text.strip()[:40]
        raise StackOutputError(f"{source} returned {shown!r}, not a map of service -> outputs")
    return {
        str(name): parse_weight(json.dumps(outputs.get(WEIGHT_OUTPUT)), f"{source} ({name})")
        for name, outputs in value.items()
    }


def _output(root: Path, stack: str, name: str, timeout: float) -> str:
    """`pulumi stack output NAME --json --stack STACK`'s text; StackOutputError when it fails."""
    try:
        return _answer(root, stack, name, timeout)
    except PulumiExitError as exc:
        raise _no_output(stack, name, exc) from None


def _answer(root: Path, stack: str, name: str, timeout: float) -> str:
    """`_output`, raising PulumiExitError when the CLI answered with a failure (a stack that
    exports no output NAME among others) and StackOutputError for everything else (no CLI, a
    timeout, too much output)."""
    command = f"`pulumi stack output {name} --stack {stack}`"
    try:
        return run_pulumi(
            root, "stack", "output", name, "--json", "--stack", stack, timeout=timeout
        )
    except PulumiExitError:
        raise
    except PulumiCliError as exc:
        if pulumi_cli() is None:
            raise StackOutputError(
                "the Pulumi CLI (pulumi) is not on PATH; pass --previous-weight N instead"
            ) from None
        raise StackOutputError(str(exc).replace(f"`pulumi stack output {name}`", command)) from None


def _no_output(stack: str, name: str, exc: PulumiExitError) -> StackOutputError:
    """The StackOutputError of a `pulumi stack output NAME` that failed (`exc`)."""
    command = f"`pulumi stack output {name} --stack {stack}`"
    message = str(exc).replace(f"`pulumi stack output {name}`", command)
    return StackOutputError(f"{message} (a stack never deployed has no output: use --first-deploy)")


def read_deployed_weights(
    root: Path, stack: str, timeout: float = PULUMI_TIMEOUT_S
) -> dict[str, int]:
    """A fleet's deployed weights in %, {service: weight}: `pulumi stack output services
    --json --stack STACK` (`parse_weights`). A service missing from it was never deployed.

    Raises StackOutputError as `read_deployed_weight` does.
    """
    text = _output(root, stack, SERVICES_OUTPUT, timeout)
    return parse_weights(text, f"`pulumi stack output {SERVICES_OUTPUT} --stack {stack}`")


def read_deployed_weight(root: Path, stack: str, timeout: float = PULUMI_TIMEOUT_S) -> int:
    """The deployed Ascend weight in %: `pulumi stack output ascendWeight --json --stack STACK`.

    Raises StackOutputError when the CLI is missing, fails (e.g. a stack never deployed:
    use `--first-deploy`), times out after `timeout` seconds, or returns something that is
    not a weight (see `parse_weight`).
    """
    stdout = _output(root, stack, WEIGHT_OUTPUT, timeout)
    return parse_weight(stdout, f"`pulumi stack output {WEIGHT_OUTPUT} --stack {stack}`")


def read_stack_weights(
    root: Path, stack: str, services: bool, timeout: float = PULUMI_TIMEOUT_S
) -> int | dict[str, int]:
    """The deployed weights in the shape the deployed stack exports them (`exports` in
    components/stack.py), whatever shape its stack file has now: a single-service stack's
    `ascendWeight` as one number (`read_deployed_weight`), a declared fleet's `services` as
    {service: weight} (`read_deployed_weights`).

    `services` says which output to ask for first (the stack file's layout: True when it
    declares `services`); when the CLI answers that one with a failure, the other is asked, so
    a stack converted to a fleet of one (or back) and not deployed since is read as it was
    deployed. A timeout or a missing CLI is not retried. Raises StackOutputError when neither
    output can be read (the first one's failure: a stack never deployed has no output), or when
    the one that answers is not weights (`parse_weight`, `parse_weights`).
    """
    first, other = (
        (SERVICES_OUTPUT, WEIGHT_OUTPUT) if services else (WEIGHT_OUTPUT, SERVICES_OUTPUT)
    )
    try:
        name, text = first, _answer(root, stack, first, timeout)
    except PulumiExitError as exc:
        try:
            name, text = other, _answer(root, stack, other, timeout)
        except PulumiExitError:
            raise _no_output(stack, first, exc) from None
    source = f"`pulumi stack output {name} --stack {stack}`"
    if name == SERVICES_OUTPUT:
        return parse_weights(text, source)
    return parse_weight(text, source)


def read_fleet_weights(
    root: Path, stack: str, fleet: Fleet, timeout: float = PULUMI_TIMEOUT_S
) -> dict[str, int]:
    """The deployed weights of the stack whose services are `fleet`, {service: weight in %}:
    the one place the two output shapes (`exports` in components/stack.py) become one. The
    stack is read as it was deployed (`read_stack_weights`): a `services` output as given (a
    service missing from it was never deployed), a single-service stack's `ascendWeight` as its
    one service's. A conversion between the two layouts not deployed yet (one service on each
    side) keeps the one service, under `fleet`'s name (the rule of `Fleet.laid_out_as`).

    Raises StackOutputError as `read_stack_weights` does, and when a stack deployed as a single
    service is read for a fleet of several (which of them it was is unknown).
    """
    deployed = read_stack_weights(root, stack, fleet.declared, timeout)
    if isinstance(deployed, dict):
        if len(deployed) == 1 and len(fleet) == 1 and not fleet.declared:
            return {fleet.first.name: next(iter(deployed.values()))}
        return deployed
    if len(fleet) != 1:
        raise StackOutputError(
            f"`pulumi stack output --stack {stack}` holds one service's {WEIGHT_OUTPUT} "
            f"({deployed}), not the {SERVICES_OUTPUT} output of {', '.join(fleet.names)}: "
            "deploy the stack's services first"
        )
    return {fleet.first.name: deployed}


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


def deployed_weights(
    root: Path, stack: str, services: list[str], timeout: float = PULUMI_TIMEOUT_S
) -> dict[str, Deployed]:
    """`read_deployed_weights` for reports, {service: Deployed} for each of `services`; never
    raises. One CLI call for the whole fleet. A service the output lacks is unknown, failed
    (never deployed: deploy the stack first)."""
    if pulumi_cli() is None:
        unknown = Deployed(None, "the pulumi CLI is not installed, so no backend was asked")
        return dict.fromkeys(services, unknown)
    try:
        weights = read_deployed_weights(root, stack, timeout)
    except StackOutputError as exc:
        return dict.fromkeys(services, Deployed(None, str(exc), failed=True))
    missing = f"not in `pulumi stack output {SERVICES_OUTPUT} --stack {stack}`: never deployed"
    return {
        name: Deployed(weights[name]) if name in weights else Deployed(None, missing, failed=True)
        for name in services
    }


def deployed_weight_of(
    root: Path, stack: str, service: str | None, timeout: float = PULUMI_TIMEOUT_S
) -> Deployed:
    """The deployed weight of one service: `deployed_weight` for the single implicit service
    (`service` None), else its entry of `deployed_weights`."""
    if service is None:
        return deployed_weight(root, stack, timeout)
    return deployed_weights(root, stack, [service], timeout)[service]


def config_set(root: Path, stack: str, key: str, value: str) -> str | None:
    """Run `pulumi config set KEY VALUE --stack STACK` (with `--path` for a dotted key such as
    `services.chat.ascendWeight`); None on success, else the reason."""
    path = ["--path"] if "." in key else []
    try:
        run_pulumi(root, "config", "set", key, value, *path, "--stack", stack)
    except PulumiCliError as exc:
        if pulumi_cli() is None:
            return "the pulumi CLI is not installed"
        return str(exc)
    return None
