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

from dualstack import __version__

COMMANDS = (
    "render",
    "preview",
    "status",
    "gate",
    "promote",
    "rollback",
    "policy_config",
    "precision_check",
    "verify_precision",
    "ci",
)
"""Modules of `dualstack.commands`; each has `register(subparsers)` setting `func`."""

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="dualstack",
        description="GitOps tooling for moving an inference service from NVIDIA to Ascend.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "-C", "--cwd", default=None, help="the GitOps repo (default: nearest Pulumi.yaml above .)"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"dualstack.commands.{name}").register(subparsers)
    return parser


def expected_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean bad input or an unreachable dependency: one line, exit 2."""
    from components.settings import SettingsError
    from dualstack.gitops import GitError
    from dualstack.policy_config import StackOutputError
    from dualstack.project import UsageError
    from dualstack.prometheus import PrometheusUnavailable
    from dualstack.render import RenderError
    from dualstack.stackfile import StackFileError
    from dualstack.validate import SchemaError

    return (
        SettingsError,
        StackFileError,
        RenderError,
        SchemaError,
        UsageError,
        GitError,
        PrometheusUnavailable,
        StackOutputError,
        OSError,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code."""
    args = build_parser().parse_args(argv)
    try:
        code = int(args.func(args) or EXIT_OK)
        sys.stdout.flush()  # a closed pipe fails here, not in the interpreter's exit
        return code
    except BrokenPipeError:  # `dualstack ... | head`: the reader has gone
        from dualstack.precision_check import discard_stdout

        discard_stdout()
        print("error: output closed (broken pipe)", file=sys.stderr)
        return EXIT_ERROR
    except expected_errors() as exc:
        for line in str(exc).splitlines() or [type(exc).__name__]:
            print(f"error: {line}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def main_exit() -> None:
    """Console-script entry point: `sys.exit(main())`."""
    sys.exit(main())
