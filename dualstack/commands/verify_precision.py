"""`dualstack verify-precision`: run the precision check for a stack and, on pass, record its
Ascend image as `verifiedAscendImage` in `Pulumi.<stack>.yaml`.

`verifiedAscendImage` is what the policy `precision-verified-before-promotion` compares with
the served Ascend image; this command is the only writer. The check uses the stack's
`precisionCheck` settings (flags override them) and labels its result with the stack's
images. On a mismatch or an error nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.settings import load_settings
from dualstack import precision_check as checker
from dualstack.project import find_root, load_stack_config
from dualstack.stackfile import StackFileError, set_config_value, stack_path

KEY = "verifiedAscendImage"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify-precision",
        help="run the precision check; on pass record the Ascend image as verified",
        description="Run the precision check against the stack's two backends with the "
        f"stack's precisionCheck settings; on pass write {KEY} (the stack's current Ascend "
        "image) into Pulumi.<stack>.yaml, keeping its comments. --ascend must reach pods "
        "that run that image.",
        epilog="Exit codes: 0 pass (image recorded), 1 mismatch, 2 could not complete; "
        "on 1 and 2 the stack file is unchanged.",
    )
    parser.add_argument("--stack", default="prod", help="stack name (default: prod)")
    checker.add_arguments(parser, images=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    settings = load_settings(load_stack_config(root, args.stack))
    image = settings.ascend.image
    base = {
        **settings.precision_check.check_fields(),
        "nvidia_image": settings.nvidia.image,
        "ascend_image": image,
    }
    code = checker.run_cli(args, base, settings.precision_check.prompt_list())
    file = stack_path(root, args.stack).name
    if code != checker.EXIT_PASS:
        print(f"{KEY} unchanged in {file}: the check did not pass", file=sys.stderr)
        return code
    # The check took a while: record only if the stack still serves the image it checked.
    current = load_settings(load_stack_config(root, args.stack)).ascend.image
    if current != image:
        raise StackFileError(
            f"{file} changed during the check: ascend image is now {current}, checked {image}; "
            f"{KEY} unchanged"
        )
    previous = set_config_value(root, args.stack, KEY, image)
    print(f"recorded {KEY} = {image} in {file} (was {previous or 'unset'})")
    return checker.EXIT_PASS
