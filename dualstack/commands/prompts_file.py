"""What `precision-check` and `verify-precision` check of `--prompts FILE` before the checker
reads it: its shape.

The checker (`precision_check.prompts.load_prompts`, shipped unchanged into the Job) reads
JSON lines, one prompt per line, or a YAML list from a `.yaml`/`.yml` file. A file written as
one JSON array (what a script's `json.dump(prompts, f)` produces) would be refused item by
item (`item 1: expected a string or a mapping ...`, or `line 1: not JSON`); this says what the
file is and how to turn it into what the checker reads.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dualstack.errors import UsageError

PEEK_BYTES = 4096
"""How much of the file is read to see how it starts."""


def check_prompts_file(args: argparse.Namespace) -> None:
    """Raise UsageError when `--prompts FILE` (a JSON-lines file, not `.yaml`/`.yml`) is one
    JSON array, naming the two ways to give it to the checker. An absent option, an unreadable
    file or any other shape is left to the checker, which words those errors itself."""
    given = getattr(args, "prompts", None)
    if not given or Path(given).suffix.lower() in (".yaml", ".yml"):
        return
    try:
        with open(given, "rb") as file:
            head = file.read(PEEK_BYTES)
    except OSError:
        return
    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        return
    name = Path(given).name
    raise UsageError(
        f"--prompts {given}: {name} is one JSON array, but the checker reads JSON lines: one "
        'prompt per line, a string or {"id", "prompt" or "messages", "answer"}; convert it '
        f"with `jq -c '.[]' {given} > prompts.jsonl`, or name it .yaml (a JSON array is a "
        "YAML list)"
    )
