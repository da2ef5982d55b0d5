"""Machine output: `-o json` prints one versioned JSON document on stdout.

Every document is an object whose first key is `schema`, `dualstack/<verb>/v1`; the fields
of each verb are documented in docs/OUTPUT.md and checked by the JSON Schemas in
docs/schemas/. A `v1` document only gains fields; renaming or removing one is `v2`.

With `-o json` the human text a command prints goes to stderr instead, so stdout holds the
document alone; errors stay one `error:` line each on stderr. A command that cannot do its
work (exit 2) prints no document, except `status`, which reports a broken stack inside it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dualstack.repo.atomic import write_file

FORMATS = ("text", "json")


def schema_id(verb: str, version: int = 1) -> str:
    """`dualstack/<verb>/v<version>`: the `schema` field of a verb's document."""
    return f"dualstack/{verb}/v{version}"


def add_output_argument(parser: argparse.ArgumentParser, json_alias: bool = False) -> None:
    """`-o/--output-format text|json`; with `json_alias`, also `--json` (= `-o json`)."""
    parser.add_argument(
        "-o",
        "--output-format",
        choices=FORMATS,
        default="text",
        metavar="FORMAT",
        help="text (default) or json: one versioned JSON document on stdout (docs/OUTPUT.md)",
    )
    if json_alias:
        parser.add_argument(
            "--json",
            dest="output_format",
            action="store_const",
            const="json",
            help="same as -o json",
        )


def add_json_file_argument(parser: argparse.ArgumentParser) -> None:
    """`--json-file FILE`: also write the `-o json` document to FILE (stdout stays text)."""
    parser.add_argument(
        "--json-file",
        type=Path,
        metavar="FILE",
        help="also write the JSON document (as -o json prints it) to FILE",
    )


def write_json_file(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    """Write `doc` to --json-file when given."""
    path = getattr(args, "json_file", None)
    if path is not None:
        write_file(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def wants_json(args: argparse.Namespace) -> bool:
    """True when the command was asked for `-o json`."""
    return getattr(args, "output_format", "text") == "json"


@contextlib.contextmanager
def human_text_to_stderr(args: argparse.Namespace) -> Iterator[None]:
    """With `-o json`, send what the command prints for people to stderr while it runs."""
    if not wants_json(args):
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield


def document(verb: str, **fields: Any) -> dict[str, Any]:
    """`{"schema": "dualstack/<verb>/v1", **fields}`."""
    return {"schema": schema_id(verb), **fields}


def emit(doc: dict[str, Any]) -> None:
    """Print `doc` as indented JSON on stdout and flush (a closed pipe fails here)."""
    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()
