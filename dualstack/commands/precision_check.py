"""`dualstack precision-check`: compare the answers of the NVIDIA and the Ascend backend.

The same checker the in-cluster Job runs (`precision_check`), with the same flags;
run it against both direct Services, e.g. through `kubectl port-forward`. `--json FILE`
writes the checker's report (docs/OUTPUT.md, "The precision-check report"), the object
`verify-precision -o json` carries as `check`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import precision_check as checker
from dualstack.cli import VERBS, examples
from dualstack.commands.output_paths import REPORT_FIELDS, check_output_file, staged_reports
from dualstack.commands.prompts_file import check_prompts_file
from precision_check.options import flag


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "precision-check",
        help=VERBS["precision-check"],
        description="Send the same prompts to the NVIDIA and the Ascend OpenAI-compatible "
        "backend (bypassing the traffic split) and compare the answers: exact text, a common "
        "prefix, per-token logprobs within a tolerance, or top-k closeness (vLLM's rule); "
        "optionally against a same-hardware baseline (--baseline). Or score both against "
        "reference answers (--mode accuracy).",
        epilog=examples(
            "dualstack precision-check --nvidia http://inference-service-nvidia:8000 \\\n"
            "--ascend http://inference-service-ascend:8000 --json report.json",
            "dualstack precision-check --nvidia http://127.0.0.1:8001 \\\n"
            "--ascend http://127.0.0.1:8002 --mode accuracy  # scored against the answers",
            before="Exit codes: 0 pass, 1 mismatch over threshold (or accuracy inconclusive), 2 "
            "could not complete (bad input, backend errors, timeouts, malformed answers, missing "
            "logprobs, deadline).",
        ),
    )
    checker.add_arguments(parser)
    parser.add_argument(
        "--json-file",
        dest="json_report",
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="same as --json FILE: write the checker's JSON report to FILE",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the answers so far on stderr (default: only when stderr is a terminal)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from precision_check.progress import Progress, reporting, wanted

    check_report_path(args)
    check_prompts_file(args)
    progress = Progress("precision check", "answers") if wanted(args.progress) else None
    with staged_reports(args), reporting(progress):
        return checker.run_cli(args)


def check_report_path(args: argparse.Namespace) -> None:
    """Refuse a `--json` / `--markdown` FILE that cannot be written before any prompt is
    sent (UsageError), rather than after the whole check."""
    for field in REPORT_FIELDS:
        if report := getattr(args, field, None):
            check_output_file(Path(report), flag(field))
