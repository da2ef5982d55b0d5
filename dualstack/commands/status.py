"""`dualstack status`: where each stack stands on the ladder, and whether git matches reality."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from components.settings import Settings, SettingsError, load_settings
from dualstack.commands.machine import add_output_argument, document, emit, wants_json
from dualstack.commands.stacks import add_stack_argument, every_stack
from dualstack.errors import EXIT_ERROR, EXIT_OK, EXIT_PENDING
from dualstack.pulumi_cli import Deployed, deployed_weight
from dualstack.redaction import redact
from dualstack.repo.baseref import default_base, describe
from dualstack.repo.stack_config import find_root, load_stack_config
from dualstack.repo.stackfile import StackFileError, read_config_at
from dualstack.step.weights import ladder_text


def pending_step(
    root: Path, stack: str, settings: Settings, deployed: Deployed, base: str | None
) -> str | None:
    """Why a step is pending (so `promote` would refuse), or None.

    Pending: the working tree's weight differs from the base's (`default_base`: the merge
    base with the default branch), or the deployed weight (when known) differs from git. The
    same two checks `promote` makes before it writes anything.
    """
    weight = settings.ascend_weight
    config = read_config_at(root, stack, base) if base is not None else None
    if config is not None:
        try:
            base_weight = load_settings(config).ascend_weight
        except SettingsError:
            base_weight = None  # the preview judges a base that no longer validates
        if base_weight is not None and base_weight != weight:
            return (
                f"{weight}% in the working tree, {base_weight}% at {describe(root, base)}: "
                "commit, merge and deploy that step, or revert it"
            )
    if deployed.weight is not None and deployed.weight != weight:
        return f"deployed {deployed.weight}%, git {weight}%: deploy the merged step, or revert it"
    return None


def stack_status(
    stack: str, settings: Settings, deployed: Deployed, pending: str | None = None
) -> dict[str, Any]:
    """One stack's status as plain data (an element of `-o json`'s `stacks`); `pending` from
    `pending_step`. `ladderPosition` reads like the stack output of the same name (`1/5`:
    step 1 of the ladder's 5 steps above 0); `drift` is True when the deployed weight is known
    and differs from git."""
    drift = deployed.weight is not None and deployed.weight != settings.ascend_weight
    return {
        "stack": stack,
        "ascendWeight": settings.ascend_weight,
        "ladder": list(settings.ladder),
        "ladderPosition": f"{settings.ladder_position}/{len(settings.ladder) - 1}",
        "nextStep": settings.next_step,
        "ascendImage": settings.ascend.image,
        "verifiedAscendImage": settings.verified_ascend_image,
        "ascendImageVerified": settings.ascend_image_verified,
        "deployedWeight": deployed.weight,
        "deployed": deployed.compare(settings.ascend_weight),
        "drift": drift,
        "pending": pending,
    }


def exit_code(results: list[dict[str, Any]]) -> int:
    """2 when a stack's config is invalid, else 3 when one drifted or has a pending step,
    else 0 (an unknown deployed weight is neither: the output says why it is unknown)."""
    if any("error" in r for r in results):
        return EXIT_ERROR
    if any(r["drift"] or r["pending"] for r in results):
        return EXIT_PENDING
    return EXIT_OK


def format_status(status: dict[str, Any], settings: Settings) -> str:
    """The human block of one stack."""
    stack, weight, step = status["stack"], status["ascendWeight"], status["nextStep"]
    if status.get("pending"):
        next_text = f"none until the pending step is settled: {status['pending']}"
    elif step is None:
        next_text = "none: the migration is complete"
    else:
        next_text = f"{step}% (dualstack promote --stack {stack})"
    if status["ascendImageVerified"]:
        image = f"{status['ascendImage']} (precision-verified)"
    else:
        verified = status["verifiedAscendImage"] or "none recorded"
        image = f"{status['ascendImage']} (NOT verified; verified image: {verified})"
    rows = [
        ("weight", f"{weight}% Ascend, {100 - weight}% NVIDIA"),
        ("ladder", f"{ladder_text(settings)} (step {status['ladderPosition']})"),
        ("next step", next_text),
        ("Ascend image", image),
        ("deployed", status["deployed"]),
    ]
    return "\n".join([stack, *(f"  {label:<13} {value}" for label, value in rows)]) + "\n"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status",
        help="each stack's weight, ladder position, next step, verified image, drift",
        description="For each Pulumi.<stack>.yaml: the Ascend weight, its place on the "
        "ladder, the next step, the verified Ascend image, and whether the deployed weight "
        "(asked from the Pulumi backend when the CLI is installed) differs from git. While a step "
        "is pending (the working tree differs from the default branch, or the deployed weight "
        "from git) the next step says what to settle first. "
        "Exit 0 every stack in sync, 3 a deployed weight differs from git or a step is "
        "pending (a drift alarm), 2 a stack's config is invalid.",
    )
    add_stack_argument(parser, many=True)
    add_output_argument(parser, json_alias=True)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    stacks = every_stack(root, args.stack)
    results, blocks = [], []
    base = default_base(root)
    for stack in stacks:
        try:
            settings = load_settings(load_stack_config(root, stack))
        except (SettingsError, StackFileError) as exc:
            first = redact(str(exc).splitlines()[0])
            print(f"error: stack {stack}: {first}", file=sys.stderr)
            results.append({"stack": stack, "error": first})
            continue
        deployed = deployed_weight(root, stack)
        pending = pending_step(root, stack, settings, deployed, base)
        status = stack_status(stack, settings, deployed, pending)
        results.append(status)
        blocks.append(format_status(status, settings))
    code = exit_code(results)
    if wants_json(args):
        emit(document("status", exitCode=code, stacks=results))
    else:
        sys.stdout.write("\n".join(blocks))
    return code
