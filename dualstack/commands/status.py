"""`dualstack status`: where each stack stands on the ladder, and whether git matches reality."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from components.settings import Settings, SettingsError, load_settings
from dualstack.deployed import Deployed, deployed_weight
from dualstack.project import find_root, load_stack_config
from dualstack.stackfile import StackFileError
from dualstack.weights import ladder_text


def stack_names(root: Path) -> list[str]:
    """Stacks with a `Pulumi.<stack>.yaml` in `root`, sorted."""
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def stack_status(stack: str, settings: Settings, deployed: Deployed) -> dict[str, Any]:
    """One stack's status as plain data (what `--json` prints)."""
    return {
        "stack": stack,
        "ascendWeight": settings.ascend_weight,
        "ladder": list(settings.ladder),
        "ladderPosition": settings.ladder_position,
        "nextStep": settings.next_step,
        "ascendImage": settings.ascend.image,
        "verifiedAscendImage": settings.verified_ascend_image,
        "ascendImageVerified": settings.ascend_image_verified,
        "deployedWeight": deployed.weight,
        "deployed": deployed.compare(settings.ascend_weight),
    }


def format_status(status: dict[str, Any], settings: Settings) -> str:
    """The human block of one stack."""
    stack, weight, step = status["stack"], status["ascendWeight"], status["nextStep"]
    last = len(settings.ladder) - 1
    if step is None:
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
        ("ladder", f"{ladder_text(settings)} (step {status['ladderPosition']} of {last})"),
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
        "(asked from the Pulumi backend when the CLI is installed) differs from git. "
        "Exit 0, or 2 when a stack's config is invalid.",
    )
    parser.add_argument("--stack", action="append", help="only this stack (repeatable)")
    parser.add_argument("--json", action="store_true", help="print JSON instead")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    stacks = args.stack or stack_names(root)
    if not stacks:
        raise StackFileError(f"no Pulumi.<stack>.yaml in {root}")
    results, blocks, failed = [], [], False
    for stack in stacks:
        try:
            settings = load_settings(load_stack_config(root, stack))
        except (SettingsError, StackFileError) as exc:
            failed = True
            first = str(exc).splitlines()[0]
            print(f"error: stack {stack}: {first}", file=sys.stderr)
            results.append({"stack": stack, "error": first})
            continue
        status = stack_status(stack, settings, deployed_weight(root, stack))
        results.append(status)
        blocks.append(format_status(status, settings))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        sys.stdout.write("\n".join(blocks))
    return 2 if failed else 0
