"""`dualstack render`: every Kubernetes object of a stack, offline, as YAML."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dualstack.project import find_root, load_stack_config
from dualstack.render import file_name, render, to_yaml
from dualstack.validate import validate_objects


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `render` sub-command to the `dualstack` parser."""
    parser = subparsers.add_parser(
        "render",
        help="print every Kubernetes object of a stack (offline, Pulumi mocks)",
        description="Run the Pulumi program under mocks with the stack's config and print "
        "every object as multi-document YAML, sorted by kind, namespace and name. Every "
        "object is schema-validated first.",
    )
    parser.add_argument("--stack", default="prod", help="stack name (default: prod)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. ascendWeight=20 or capacity.totalReplicas=6",
    )
    parser.add_argument("--output", type=Path, help="write one file per object into DIR")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run `dualstack render`; returns the exit code (errors propagate to `cli.main`)."""
    root = find_root(Path(args.cwd) if args.cwd else None)
    _settings, objects = render(load_stack_config(root, args.stack, args.set), args.stack)
    validate_objects(objects)
    if args.output is None:
        sys.stdout.write(to_yaml(objects))
        return 0
    args.output.mkdir(parents=True, exist_ok=True)
    for obj in objects:
        (args.output / file_name(obj)).write_text(to_yaml([obj]), encoding="utf-8")
    print(f"wrote {len(objects)} objects to {args.output}", file=sys.stderr)
    return 0
