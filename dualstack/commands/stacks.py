"""Which stacks a command works on: `-s/--stack`, shared by every verb.

A stack is a `Pulumi.<stack>.yaml` beside `Pulumi.yaml`. Commands that write (promote,
rollback, verify-precision) and commands whose output is one stack's (render, policy-config)
take exactly one: `-s STACK`, which may be left out only when the repo has a single stack
file. Reading commands that report per stack (status, preview, gate) take `-s` repeatable and
cover every stack when it is not given.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dualstack.errors import UsageError


def add_stack_argument(parser: argparse.ArgumentParser, many: bool = False) -> None:
    """`-s/--stack`: one stack (`many=False`), or repeatable with every stack as default."""
    if many:
        parser.add_argument(
            "-s",
            "--stack",
            action="append",
            metavar="STACK",
            help="only this stack (repeatable; default: every Pulumi.<stack>.yaml)",
        )
    else:
        parser.add_argument(
            "-s",
            "--stack",
            metavar="STACK",
            help="the stack (Pulumi.<stack>.yaml); may be left out when the repo has only one",
        )


def one_stack(root: Path, given: str | None, verb: str) -> str:
    """The stack `verb` works on: `given`, else the repo's only stack.

    Raises UsageError naming the stacks when there are several and none was given, and
    StackFileError when the repo has no stack file at all.
    """
    if given is not None:  # an empty or bad name is the stack file reader's to refuse
        return given
    from dualstack.repo.stackfile import StackFileError, stacks  # pydantic, kept lazy

    names = stacks(root)
    if len(names) == 1:
        return names[0]
    if not names:
        raise StackFileError(f"no Pulumi.<stack>.yaml in {root}")
    raise UsageError(
        f"{verb} needs a stack: pass -s STACK (this repo has {len(names)}: {', '.join(names)})"
    )


def every_stack(root: Path, given: list[str] | None) -> list[str]:
    """The stacks a reading command covers: `given` in order, else every stack, sorted.

    Raises StackFileError when the repo has no stack file.
    """
    from dualstack.repo.stackfile import StackFileError, stacks  # pydantic, kept lazy

    if given:
        return list(dict.fromkeys(given))
    names = stacks(root)
    if not names:
        raise StackFileError(f"no Pulumi.<stack>.yaml in {root}")
    return names


def add_service_argument(parser: argparse.ArgumentParser) -> None:
    """`--service NAME`: one service of a fleet stack (`services.<name>`); the default is the
    stack's only service, and a fleet of several without it is an error listing them."""
    parser.add_argument(
        "--service",
        metavar="NAME",
        default=None,
        help="the service of a fleet stack (services.<name>); default: the only service",
    )
