"""`dualstack policy-config`: write the `--policy-pack-config` file for `pulumi preview`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components import ladder as rungs
from components.settings import PROJECT, load_fleet
from dualstack.cli import VERBS, examples
from dualstack.commands.arg_types import weight
from dualstack.commands.output_paths import check_output_file
from dualstack.commands.stacks import add_stack_argument, one_stack
from dualstack.errors import UsageError
from dualstack.offline.code_identity import require_own_code
from dualstack.offline.judge import JudgeRequest, base_of_tree, judge
from dualstack.offline.judge_client import base_judge, resolve_base
from dualstack.offline.policy_config import write_config
from dualstack.offline.protocol import Weights
from dualstack.pulumi_cli import SERVICES_OUTPUT, WEIGHT_OUTPUT, read_stack_weights
from dualstack.repo.stack_config import find_root, load_stack_config
from dualstack.repo.stackfile import read_config


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "policy-config",
        help=VERBS["policy-config"],
        epilog=examples(
            "dualstack policy-config --stack prod --from-stack-output --base origin/main \\\n"
            "--output policy-config.json",
            "dualstack -C base-checkout policy-config --stack prod --previous-weight 5 \\\n"
            "--head . --output policy-config.json  # from the base's checkout, the head as data",
        ),
        description="Build the JSON file for `pulumi preview --policy-pack <base>/policies "
        "--policy-pack-config FILE`, judged by the BASE: its code computes every fact the "
        "policies compare against from the base's stack file (step limit, capacity, pools, "
        "driver paths, tag pattern, deployed and verified images) and the safety-envelope "
        "changes of the head; the previous weight is the DEPLOYED one. Either --base REF (run "
        "from the head: the base's code runs in a worktree of REF) or --head DIR (run from a "
        "checkout of the base, the pipelines: DIR is read as data). Exit 0 written, 2 the "
        "weight or the base could not be read, or the base cannot judge (nothing written).",
    )
    add_stack_argument(parser)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from-stack-output",
        action="store_true",
        help="read the deployed weight with `pulumi stack output ascendWeight` (CI); a fleet's "
        "with `pulumi stack output services`",
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
    judged = parser.add_mutually_exclusive_group(required=True)
    judged.add_argument(
        "--base",
        metavar="GIT_REF",
        help="the base (PR: the target branch; deploy: the previous commit of the default "
        "branch); its own code judges this tree in a temporary worktree",
    )
    judged.add_argument(
        "--head",
        type=Path,
        metavar="DIR",
        help="run from a checkout of the base (-C): the head is the tree DIR, read as data",
    )
    parser.add_argument(
        "--owner-approved",
        action="store_true",
        help="the change carries the owners' approval (pipelines: from the code host's "
        "review state only)",
    )
    parser.add_argument(
        "-o",
        "--output-format",
        type=output_format,
        default="json",
        metavar="FORMAT",
        help="json (the only format, and the default): the pack's config on standard output; "
        "-o is the output format in every command, --output FILE writes a file",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the JSON to FILE instead of standard output, atomically: FILE holds its old "
        "content or the whole new one, never part of it, and keeps its mode; a folder is "
        "refused, a symlink followed, a FIFO or device written through; nothing is written "
        "when the base cannot judge (exit 2)",
    )
    parser.set_defaults(func=run)


def output_format(value: str) -> str:
    """`-o`'s value: `json`, the only format policy-config has. Anything else, a file name
    included, is refused in one line pointing at `--output FILE`."""
    if value == "json":
        return value
    raise argparse.ArgumentTypeError(
        f"{value!r}: -o is the output format and policy-config has one, json; to write the "
        "JSON to a file pass --output FILE"
    )


def _previous(args: argparse.Namespace, root: Path, fleet: int) -> tuple[Weights, str]:
    """The judge request's `previousWeight` as the flags give it, and where it came from: the
    edge where the deployed weight takes the protocol's shape (read by a base of any age):
    one number for a single-service stack (`--previous-weight N`, the `ascendWeight`
    output), a fleet's {service: weight} (the `services` output; one number is refused),
    None for `--first-deploy`. `--from-stack-output` gives the shape the stack was deployed
    in (`read_stack_weights`), whatever layout the head has: a conversion to a fleet of one
    (or back) sends what runs, and the base's judge maps it onto the head's service
    (`one_service`). `fleet` is the number of services the head declares (0: none); one
    number is refused for several, but not for a fleet of one: a stack converted into it still
    exports one weight, which the base's judge maps onto its member (and refuses when the base
    declares `services` too, `wire_previous`). The judge turns it into {service: weight}
    (`dualstack.offline.judge.previous_weights`)."""
    if args.from_stack_output:
        deployed = read_stack_weights(root, args.stack, fleet > 0)
        output = SERVICES_OUTPUT if isinstance(deployed, dict) else WEIGHT_OUTPUT
        return deployed, f"pulumi stack output {output}"
    if args.first_deploy:
        return None, "first deploy"
    if fleet > 1:
        raise UsageError(
            f"--previous-weight {args.previous_weight}: stack {args.stack} holds several "
            "services, each with its own deployed weight; use --from-stack-output (or "
            "--first-deploy)"
        )
    return args.previous_weight, "--previous-weight"


def _declared(config: Mapping[str, Any]) -> int:
    """How many services the stack file `config` declares: 0 without `services`, else its
    members' count (2, several, for an empty one or a value that is not a mapping: never
    taken for one)."""
    key = f"{PROJECT}:services"
    if key not in config:
        return 0
    services = config[key]
    return len(services) if isinstance(services, Mapping) and services else 2


def _check_previous(args: argparse.Namespace, ladder: Sequence[int]) -> None:
    """UsageError when `--previous-weight` is not a step of `ladder`."""
    if args.previous_weight is None:
        return
    if problem := rungs.step_problem(ladder, args.previous_weight, f" of stack {args.stack}"):
        raise UsageError(f"--previous-weight {args.previous_weight}: {problem}")


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    args.stack = one_stack(root, args.stack, "policy-config")
    check_output_file(args.output, "--output")
    if args.head is not None:
        require_own_code(root)  # this checkout is the base: its own code judges
        head_root = find_root(args.head)
        head_config = read_config(head_root, args.stack)
    else:
        head_config = load_stack_config(root, args.stack)
        _check_previous(args, load_fleet(head_config).first.ladder)  # a bad head: exit 2 now
    previous, origin = _previous(args, root, _declared(head_config))
    head = head_root if args.head is not None else root
    request = JudgeRequest(args.stack, head, head_config, None, args.owner_approved, previous)
    if args.head is not None:
        answer = judge(base_of_tree(root, args.stack), request)
        where = f"this checkout ({answer.base_commit[:7]})"
    else:
        base = resolve_base(root, args.base)
        with base_judge(root, base, args.stack) as base_code:
            answer = base_code.send(request)
        where = f"{base.label}, {base_code.where}"
    config = answer.pack_config
    _check_previous(args, config.get("no-unsafe-weight-jump", {}).get("ladder", []))
    text = write_config(config, args.output)
    if isinstance(previous, dict):
        shown = ", ".join(f"{name} {weight}%" for name, weight in previous.items()) or "none"
    else:
        shown = "none" if previous is None else f"{previous}%"
    first = f"; Pulumi.{args.stack}.yaml absent at the base: a first deploy"
    changes = len(answer.envelope)
    envelope = f"{changes} envelope change{'s' * (changes != 1)}" + (
        " (owner-approved)" if args.owner_approved and changes else ""
    )
    if args.output is None:
        sys.stdout.write(text)
    else:
        print(
            f"wrote {args.output}: previous weight {shown} ({origin}); facts from the base "
            f"({where}){first if answer.first_deploy else ''}; {envelope}",
            file=sys.stderr,
        )
    return 0
