"""The command line: flags, `run_cli` (shared with `dualstack precision-check`), `main`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .markdown import format_markdown
from .numbers import amount, count, plain
from .options import (
    DEFAULTS,
    ENDPOINTS,
    EXIT_ERROR,
    EXIT_PASS,
    MAX_TOP_K,
    MODES,
    PREFIX_UNITS,
    CheckError,
    Options,
    flag,
)
from .output import PASSED, format_summary, push_metrics
from .prompts import Prompt, load_prompts
from .redaction import redact
from .run import run_check

FIELDS = frozenset(f.name for f in dataclasses.fields(Options))


def add_arguments(
    parser: argparse.ArgumentParser,
    images: bool = True,
    defaults: Mapping[str, str] | None = None,
) -> None:
    """Add every check flag to `parser`; `images=False` leaves out --nvidia-image and
    --ascend-image (for callers that know the images). `defaults` (field name -> text)
    replaces the shown default of fields whose default comes from elsewhere, such as a
    stack's settings. Unset flags stay absent from the parsed namespace (`argparse.SUPPRESS`),
    so `options_from_args` can lay them over those other defaults."""

    def option(name: str, text: str, unset: str = "", **kwargs: Any) -> None:
        default = DEFAULTS.get(name)
        plain = unset if default in (None, ()) or isinstance(default, bool) else default
        shown = (defaults or {}).get(name) or plain
        kwargs.setdefault("dest", name)
        help_text = text + (f" (default: {shown})" if shown != "" else "")
        parser.add_argument(flag(name), default=argparse.SUPPRESS, help=help_text, **kwargs)

    parser.add_argument("--nvidia", required=True, metavar="URL", help="NVIDIA backend base URL")
    parser.add_argument("--ascend", required=True, metavar="URL", help="Ascend backend base URL")
    option("prompts", "JSON-lines file or YAML list of prompts", "built-in set", metavar="FILE")
    option("endpoint", "OpenAI API to call", choices=tuple(ENDPOINTS))
    option("model", "`model` field of each request", "not sent", metavar="NAME")
    option("max_tokens", "tokens to generate per prompt", type=count, metavar="N")
    option("seed", "`seed` field of each request", type=count, metavar="N")
    parser.add_argument(
        "--no-seed",
        dest="seed",
        action="store_const",
        const=None,
        default=argparse.SUPPRESS,
        help="send no `seed` (for servers that reject it)",
    )
    option("mode", "comparison mode", choices=MODES)
    option(
        "min_match_rate",
        "%% of answer pairs that must match, above 0 (comparison modes)",
        type=amount,
        metavar="PCT",
    )
    option(
        "prefix_length",
        "prefix mode: leading chars/tokens that must agree",
        type=count,
        metavar="N",
    )
    option("prefix_unit", "prefix mode: unit of --prefix-length", choices=PREFIX_UNITS)
    option(
        "tolerance",
        "logprobs mode: largest absolute logprob difference",
        type=amount,
        metavar="ABS",
    )
    option(
        "top_k",
        f"topk mode: at the first difference each token must be among the other side's N "
        f"most likely (1-{MAX_TOP_K})",
        type=count,
        metavar="N",
    )
    option(
        "baseline",
        "send every prompt twice to each backend and judge the cross-hardware agreement "
        "against each backend's agreement with itself",
        action="store_true",
    )
    parser.add_argument(
        "--no-baseline",
        dest="baseline",
        action="store_const",
        const=False,
        default=argparse.SUPPRESS,
        help="ask each prompt once (overrides a stack's `baseline: true`)",
    )
    option(
        "baseline_margin",
        "baseline: points the cross agreement may fall below the weaker same-hardware one",
        type=amount,
        metavar="PTS",
    )
    option(
        "accuracy_tolerance",
        "accuracy mode: points Ascend may be below NVIDIA, with 95 %% confidence",
        type=amount,
        metavar="PTS",
    )
    option("concurrency", "requests in flight per backend", type=count, metavar="N")
    option("timeout", "seconds to wait for one answer", type=amount, metavar="S")
    option("retries", "retries on connection errors and HTTP 5xx/429", type=count, metavar="N")
    option("backoff", "seconds before the first retry, doubling", type=amount, metavar="S")
    option("deadline", "seconds for the whole check", type=amount, metavar="S")
    option("json_report", "write the JSON report to FILE", metavar="FILE")
    option("markdown_report", "write the Markdown report to FILE", metavar="FILE")
    option("pushgateway", "push precision_check_* metrics to this Pushgateway", metavar="URL")
    option("push_job", "Pushgateway job name", metavar="NAME")
    option(
        "push_labels",
        "extra grouping label, e.g. namespace=inference (repeatable)",
        action="append",
        metavar="KEY=VALUE",
    )
    if images:
        option("nvidia_image", "NVIDIA image under test (metric label)", metavar="IMAGE")
        option("ascend_image", "Ascend image under test (metric label)", metavar="IMAGE")
    option("api_key_env", "send `Authorization: Bearer $VAR`", metavar="VAR")


def options_from_args(args: argparse.Namespace, base: dict[str, Any] | None = None) -> Options:
    """Options from parsed flags laid over `base` (field name -> value) and the defaults.

    Raises CheckError naming the flag when a value is out of range.
    """
    given = {key: value for key, value in vars(args).items() if key in FIELDS}
    if "push_labels" in given:
        given["push_labels"] = tuple(given["push_labels"])
    return Options(**{**(base or {}), **given})


def to_argv(options: Options) -> list[str]:
    """The flags that reproduce `options`, defaults left out (the Job's container args).

    `options_from_args(parse(to_argv(o))) == o` for every valid `o`.
    """
    argv: list[str] = []
    for f in dataclasses.fields(Options):
        value = getattr(options, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        if f.name == "seed" and value is None:
            argv.append("--no-seed")
        elif isinstance(value, bool):
            argv.append(flag(f.name))  # a store_true flag: only True differs from the default
        elif isinstance(value, tuple):
            argv += [arg for item in value for arg in (flag(f.name), item)]
        else:
            argv += [flag(f.name), plain(value) if isinstance(value, float) else str(value)]
    return argv


def run_cli(
    args: argparse.Namespace,
    base: dict[str, Any] | None = None,
    prompts: list[Prompt] | None = None,
) -> int:
    """Run a check from parsed flags: summary on stdout, `error: <cause>` lines on stderr,
    then the optional JSON report and push. `base` supplies defaults under the flags;
    `prompts` replaces the built-in set when no --prompts is given.

    Returns the exit code: 0 pass, 1 mismatch over threshold or inconclusive, 2 could not
    complete (also when a report cannot be written or the push fails).
    """
    try:
        options = options_from_args(args, base)
        if options.prompts or prompts is None:
            prompts = load_prompts(options.prompts, options.mode)
        report = run_check(options, prompts)
    except CheckError as exc:
        print(redact(f"error: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(redact(format_summary(report)))
    problems = report.errors[:1]
    reports = (
        (
            "--json",
            options.json_report,
            lambda: json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n",
        ),
        ("--markdown", options.markdown_report, lambda: format_markdown(report)),
    )
    for name, path, render in reports:
        try:
            if path:
                Path(path).write_text(redact(render()), encoding="utf-8")
        except OSError as exc:
            problems.append(f"{name} {path}: {exc.strerror or exc}")
    try:
        if options.pushgateway:
            url = push_metrics(report)
            print(redact(f"pushed {PASSED}={int(report.exit_code == EXIT_PASS)} to {url}"))
    except CheckError as exc:
        problems.append(str(exc))
    for problem in problems:
        print(redact(f"error: {problem}"), file=sys.stderr)
    return EXIT_ERROR if problems else report.exit_code


def build_parser(prog: str = "precision_check") -> argparse.ArgumentParser:
    """The stand-alone parser (`python3 -m precision_check --help`)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Send the same prompts to an NVIDIA and an Ascend OpenAI-compatible "
        "backend and compare the answers.",
        epilog="Exit codes: 0 pass, 1 mismatch over threshold (or inconclusive), 2 could not "
        "complete.",
    )
    add_arguments(parser)
    return parser


def discard_stdout() -> None:
    """Point stdout at /dev/null once its reader has gone (`... | head`), so the interpreter's
    last flush does not fail again (docs.python.org/3/library/signal.html, "Note on SIGPIPE").
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # stdout is no file descriptor (a test captures it): nothing to flush at exit


def main(argv: list[str] | None = None) -> int:
    """Entry point of the stand-alone check (the Job's command); returns the exit code, 2
    also when stdout's reader has gone before the summary was written."""
    args = build_parser().parse_args(argv)
    try:
        code = run_cli(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        discard_stdout()
        print("error: output closed (broken pipe)", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a bug must not exit 1, which means "mismatch"
        print(f"error: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
