"""The `dualstack` command line: one sub-command per module in `dualstack.commands`.

Exit codes shared by every command: 0 success, 1 a check failed (policy violation, gate
failure, precision mismatch), 2 the command could not do its work (bad input, missing file,
unreachable server). Errors print one line per cause on stderr, prefixed `error:`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from dualstack import __version__
from dualstack.errors import EXIT_ERROR, EXIT_OK, UsageError, error_lines

VERBS = {
    "render": "print every Kubernetes object of a stack (offline, no Pulumi engine)",
    "preview": "what a migration step changes, against a git base (offline)",
    "status": "each stack's weight, ladder position, next step, verified image, drift",
    "gate": "judge the next ladder step on Prometheus data (exit 0 only on PASS)",
    "promote": "gate, then raise ascendWeight one ladder step; print the PR text",
    "rollback": "lower ascendWeight to 0 (or --to a lower step) and print the fastest path",
    "policy-config": "write the policy pack config (previous weight, base facts, envelope) "
    "for pulumi",
    "precision-check": "send the same prompts to both backends and compare the answers",
    "verify-precision": "run the precision check; on pass record the Ascend image as verified",
    "ci": "pipeline helpers: changed stacks, PR report, GitLab note, rollback targets",
    "completion": "print the bash or zsh completion script",
}
"""Each sub-command as typed, in `--help` order, and its one-line summary: what `dualstack
--help` lists without importing any command module. Its module is `dualstack.commands.<name,
- as _>`, whose `register` adds the sub-parser with this summary."""

COMMANDS = tuple(verb.replace("-", "_") for verb in VERBS)
"""Modules of `dualstack.commands`; each has `register(subparsers)` setting `func`."""


EXAMPLES = "Examples:"
"""The heading of the last section of every `--help` (the parser's epilog)."""


def examples(*commands: str, before: str = "") -> str:
    """A parser's epilog: `before` (a paragraph, e.g. the exit codes), then `Examples:` and one
    indented line per command, printed as written (`ExamplesFormatter`); a command too long for
    a line continues after ` \\` + newline on lines indented further. A command may end in a
    `# comment`; tests/dualstack/commands/test_help_examples.py parses every one."""
    lines = [
        ("  " if number == 0 else "      ") + line
        for command in commands
        for number, line in enumerate(command.split("\n"))
    ]
    section = "\n".join([EXAMPLES, *lines])
    return f"{before}\n\n{section}" if before else section


class ExamplesFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that the `Examples:` paragraph keeps its lines: every other
    paragraph of a description or epilog is filled as argparse fills it."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(
            "\n".join(indent + line for line in paragraph.splitlines())
            if paragraph.startswith(EXAMPLES)
            else super(ExamplesFormatter, self)._fill_text(paragraph, width, indent)
            for paragraph in text.split("\n\n")
        )


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr and exit 2:
    `error: rollback: argument --to: invalid int value: 'abc' (see dualstack rollback --help)`.

    Sub-parsers made by `add_subparsers` get this class too (argparse uses the parent's type),
    and with it the `ExamplesFormatter`.
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", ExamplesFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        command = self.prog.split()[-1] if " " in self.prog else self.prog
        message = printable(" ".join(message.split()))
        self.exit(EXIT_ERROR, f"error: {command}: {message} (see {self.prog} --help)\n")


MAX_LINE_CHARS = 1000
"""Longest error line printed; values inside are already cut to 200 characters (`shown`)."""
MAX_ERROR_LINES = 40
"""Most error lines printed for one failure; the rest are counted."""


def printable(line: str) -> str:
    """An error line as printed: credentials redacted, cut to `MAX_LINE_CHARS`."""
    # Imported here: the redaction lives in the precision checker's package, whose import
    # (its CLI, http.client) is most of `--version`'s and `--help`'s start-up otherwise.
    from dualstack.redaction import redact

    line = redact(line)
    if len(line) > MAX_LINE_CHARS:
        line = f"{line[:MAX_LINE_CHARS]}… ({len(line) - MAX_LINE_CHARS} more characters)"
    return line


def print_error(exc: BaseException) -> None:
    """Print an expected error: `error: <line>` per line of its message, redacted and cut."""
    lines = error_lines(exc)
    shown_lines = lines[:MAX_ERROR_LINES]
    if len(lines) > MAX_ERROR_LINES:
        shown_lines.append(f"... and {len(lines) - MAX_ERROR_LINES} more problems")
    for line in shown_lines:
        print(f"error: {printable(line)}", file=sys.stderr)


def chosen_command(argv: Sequence[str]) -> str | None:
    """The module of the sub-command `argv` names (`precision-check` -> `precision_check`),
    or None when there is none or it is unknown (then every command is registered)."""
    tokens = iter(argv)
    for token in tokens:
        if token in ("-C", "--cwd"):
            next(tokens, None)
        elif not token.startswith("-"):
            module = token.replace("-", "_")
            return module if module in COMMANDS else None
    return None


def build_parser(command: str | None = None, every: bool = False) -> argparse.ArgumentParser:
    """The argument parser with `command`'s module registered, or with `every` module's.

    Without either (`dualstack --help`, `--version`, no or an unknown command) each command
    is only listed, by its summary (`dualstack.commands.VERBS`), so no command module is
    imported; registering one imports only its module: `dualstack ci ...` does not pay for
    importing Pulumi, and `dualstack render` not for the policy pack.
    """
    parser = OneLineParser(
        prog="dualstack",
        description="GitOps tooling for moving an inference service from NVIDIA to Ascend.",
        epilog=examples(
            "dualstack status                       # where every stack stands",
            "dualstack preview --stack prod --next  # what the next ladder step would change",
            "dualstack promote --stack prod --prometheus http://127.0.0.1:9090 --commit",
            'dualstack rollback --emergency --stack prod --reason "p99 doubled"',
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "-C", "--cwd", default=None, help="the GitOps repo (default: nearest Pulumi.yaml above .)"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command is None and not every:
        for verb, summary in VERBS.items():
            subparsers.add_parser(verb, help=summary, add_help=False)
        return parser
    for name in COMMANDS if every else (command,):
        importlib.import_module(f"dualstack.commands.{name}").register(subparsers)
    return parser


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """`argv` parsed by the parser of the command it names (`chosen_command`). When that
    names none, the parser that only lists the commands answers --help, --version and a
    missing or unknown command, else says which command argparse found (`--cw DIR render`:
    an abbreviated option) and that command's parser parses. Raises SystemExit for --help,
    --version and usage errors."""
    command = chosen_command(argv)
    if command is None:
        found, _ = build_parser().parse_known_args(argv)
        command = found.command.replace("-", "_")
    return build_parser(command).parse_args(argv)


def expected_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean bad input or an unreachable dependency: one line, exit 2.

    Imported lazily, so a command pays only for the modules it loads itself.
    """
    from components.settings import SettingsError
    from dualstack.gate.prometheus import PrometheusError
    from dualstack.offline.judge import JudgeError
    from dualstack.offline.render import RenderError
    from dualstack.offline.schemas import SchemaError
    from dualstack.pulumi_cli import PulumiCliError, StackOutputError
    from dualstack.repo.git import GitError
    from dualstack.repo.lock import RepoLockError
    from dualstack.repo.stackfile import StackFileError
    from dualstack.step.open_pr import OpenPrError

    return (
        SettingsError,
        StackFileError,
        RenderError,
        SchemaError,
        UsageError,
        GitError,
        RepoLockError,
        PrometheusError,
        StackOutputError,
        PulumiCliError,
        JudgeError,
        OpenPrError,
        OSError,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (a usage error from the parser is 2)."""
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = parse(argv)
    except SystemExit as exc:  # --help, --version, or a one-line usage error
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    try:
        code = int(args.func(args) or EXIT_OK)
        sys.stdout.flush()  # a closed pipe fails here, not in the interpreter's exit
        return code
    except BrokenPipeError:  # `dualstack ... | head`: the reader has gone
        from precision_check import discard_stdout

        discard_stdout()
        print("error: output closed (broken pipe)", file=sys.stderr)
        return EXIT_ERROR
    except expected_errors() as exc:
        print_error(exc)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def main_exit() -> None:
    """Console-script entry point: `sys.exit(main())`."""
    sys.exit(main())
