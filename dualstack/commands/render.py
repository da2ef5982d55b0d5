"""`dualstack render`: every Kubernetes object of a stack, offline, as YAML."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from dualstack.cli import VERBS, examples
from dualstack.commands.output_paths import check_output_dir
from dualstack.commands.stacks import add_stack_argument, one_stack
from dualstack.offline.render import file_name, render_fleet, to_yaml
from dualstack.offline.schemas import validate_objects
from dualstack.repo.atomic import write_file
from dualstack.repo.stack_config import find_root, load_stack_config


def stale_files(folder: Path, keep: set[str]) -> list[Path]:
    """`*.yaml` files in `folder` a previous render wrote and this one does not: each holds one
    object whose `file_name()` is the file's name. Other files are never touched."""
    stale = []
    for path in sorted(folder.glob("*.yaml")):
        if path.name in keep or not path.is_file():
            continue
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if len(docs) == 1 and _rendered_as(docs[0]) == path.name:
            stale.append(path)
    return stale


def _rendered_as(doc: Any) -> str | None:
    if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
        return None
    if not isinstance(doc.get("kind"), str) or not doc["metadata"].get("name"):
        return None
    try:
        return file_name(doc)
    except (KeyError, TypeError, AttributeError):
        return None


def write_objects(folder: Path, objects: list[dict[str, Any]]) -> tuple[int, int]:
    """One file per object in `folder` (created if missing), and the stale ones of an earlier
    render removed, so the folder mirrors the stack. Returns (written, removed)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = {file_name(obj): obj for obj in objects}
    for name, obj in names.items():
        write_file(folder / name, to_yaml([obj]))
    removed = stale_files(folder, set(names))
    for path in removed:
        path.unlink()
    return len(names), len(removed)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `render` sub-command to the `dualstack` parser."""
    parser = subparsers.add_parser(
        "render",
        help=VERBS["render"],
        epilog=examples(
            "dualstack render --stack prod",
            "dualstack render --stack prod --output out/  # one file per object",
            "dualstack render --stack prod --set ascendWeight=20 --set capacity.totalReplicas=6",
        ),
        description="Build every object of the Pulumi program from the stack's config, "
        "without the engine, and print them as multi-document YAML, sorted by kind, "
        "namespace and name. Every object is schema-validated first.",
    )
    add_stack_argument(parser)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. ascendWeight=20 or capacity.totalReplicas=6",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="DIR",
        help="write one file per object into DIR (created if missing); files an earlier "
        "render wrote there for objects that are gone are removed",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run `dualstack render`; returns the exit code (errors propagate to `cli.main`)."""
    root = find_root(Path(args.cwd) if args.cwd else None)
    args.stack = one_stack(root, args.stack, "render")
    if args.output is not None:
        check_output_dir(args.output, "--output")
    _fleet, objects = render_fleet(load_stack_config(root, args.stack, args.set), args.stack)
    validate_objects(objects)
    if args.output is None:
        sys.stdout.write(to_yaml(objects))
        return 0
    written, removed = write_objects(args.output, objects)
    gone = f", removed {removed} stale from an earlier render" if removed else ""
    print(f"wrote {written} objects to {args.output}{gone}", file=sys.stderr)
    return 0
