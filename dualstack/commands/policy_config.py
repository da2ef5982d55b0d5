"""`dualstack policy-config`: write the `--policy-pack-config` file for `pulumi preview`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.settings import load_settings
from dualstack.commands.arg_types import weight
from dualstack.commands.output_paths import check_output_file
from dualstack.commands.stacks import add_stack_argument, one_stack
from dualstack.errors import UsageError
from dualstack.offline.policy_config import base_settings_at, pack_config, write_config
from dualstack.pulumi_cli import read_deployed_weight
from dualstack.repo.stack_config import find_root, load_stack_config


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "policy-config",
        help="write the policy pack config (previous weight, ladder, ...) for `pulumi preview`",
        description="Build the JSON file for `pulumi preview --policy-pack policies "
        "--policy-pack-config FILE` from the stack's config and the DEPLOYED Ascend weight. "
        "With --base, the step limit (ladder, maxStep) and the deployed Ascend image come from "
        "the stack file at that git ref, so the change under review cannot loosen them. "
        "Exit 0 written, 2 the weight or the base could not be read (nothing written).",
    )
    add_stack_argument(parser)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from-stack-output",
        action="store_true",
        help="read the deployed weight with `pulumi stack output ascendWeight` (CI)",
    )
    source.add_argument(
        "--previous-weight",
        type=weight,
        metavar="N",
        help="the deployed Ascend weight in %%, given by hand",
    )
    source.add_argument(
        "--first-deploy",
        action="store_true",
        help="the stack was never deployed: only 0 or the first ladder step passes",
    )
    parser.add_argument(
        "--base",
        metavar="GIT_REF",
        help="take the step limit (ladder, policy.maxStep) and the previous Ascend image from "
        "Pulumi.<stack>.yaml at this ref (the PR's target branch), not from the change itself",
    )
    parser.add_argument(
        "-o", "--output", type=Path, help="write the JSON here (default: standard output)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    args.stack = one_stack(root, args.stack, "policy-config")
    settings = load_settings(load_stack_config(root, args.stack))
    check_output_file(args.output, "--output")
    if args.previous_weight is not None and args.previous_weight not in settings.ladder:
        steps = ", ".join(map(str, settings.ladder))
        raise UsageError(
            f"--previous-weight {args.previous_weight}: not a ladder step of stack "
            f"{args.stack}; allowed: {steps}"
        )
    if args.from_stack_output:
        previous = read_deployed_weight(root, args.stack)
        origin = "pulumi stack output ascendWeight"
    elif args.first_deploy:
        previous, origin = None, "first deploy"
    else:
        previous, origin = args.previous_weight, "--previous-weight"
    base = base_settings_at(root, args.stack, args.base) if args.base else None
    text = write_config(pack_config(settings, previous, base), args.output)
    shown = "none" if previous is None else f"{previous}%"
    if args.base is None:
        limit = "step limit from the stack file itself (no --base)"
    elif base is None:
        limit = f"Pulumi.{args.stack}.yaml absent at {args.base}: step limit from the stack file"
    else:
        limit = f"step limit and previous Ascend image from {args.base}"
    if args.output is None:
        sys.stdout.write(text)
    else:
        print(f"wrote {args.output}: previous weight {shown} ({origin}); {limit}", file=sys.stderr)
    return 0
