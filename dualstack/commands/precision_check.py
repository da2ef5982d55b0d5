"""`dualstack precision-check`: compare the answers of the NVIDIA and the Ascend backend.

The same checker the in-cluster Job runs (`precision_check`), with the same flags;
run it against both direct Services, e.g. through `kubectl port-forward`.
"""

from __future__ import annotations

import argparse

import precision_check as checker


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "precision-check",
        help="send the same prompts to both backends and compare the answers",
        description="Send the same prompts to the NVIDIA and the Ascend OpenAI-compatible "
        "backend (bypassing the traffic split) and compare the answers: exact text, a common "
        "prefix, per-token logprobs within a tolerance, or top-k closeness (vLLM's rule); "
        "optionally against a same-hardware baseline (--baseline). Or score both against "
        "reference answers (--mode accuracy).",
        epilog="Exit codes: 0 pass, 1 mismatch over threshold (or accuracy inconclusive), 2 "
        "could not complete (bad input, backend errors, timeouts, malformed answers, missing "
        "logprobs, deadline).",
    )
    checker.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return checker.run_cli(args)
