"""`dualstack rollback`: lower the Ascend weight at once (default 0%), always allowed; with
`--emergency`, traffic first (`dualstack.step.traffic_first`): stop, apply, then commit."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from components import ladder
from components.settings import Fleet, Settings, load_fleet
from dualstack.cli import VERBS, examples
from dualstack.commands.arg_types import whole_number
from dualstack.commands.machine import (
    add_output_argument,
    document,
    emit,
    human_text_to_stderr,
    wants_json,
)
from dualstack.commands.output_paths import check_output_file
from dualstack.commands.pr_options import add_pr_arguments, commit_plan, publish
from dualstack.commands.rollback_emergency import add_emergency_arguments, run_emergency
from dualstack.commands.rollback_policy import preview_of, render_side, violations_of
from dualstack.commands.stacks import add_service_argument, add_stack_argument, one_stack
from dualstack.errors import UsageError
from dualstack.offline.policy_results import policy_refusal
from dualstack.offline.preview_data import policy_data, preview_data
from dualstack.repo.baseref import default_base
from dualstack.repo.lock import repo_lock
from dualstack.repo.stack_config import find_root, load_stack_config
from dualstack.repo.stackfile import stack_path
from dualstack.step.emergency import instructions
from dualstack.step.pr_text import (
    fleet_rollback_body,
    fleet_rollback_title,
    rollback_body,
    rollback_title,
)
from dualstack.step.publish import CommitPlan, choose_branch, commit_workspace
from dualstack.step.weights import (
    WeightChange,
    change_fleet_weights,
    change_weight,
    restore_stack_file,
    rollback_target,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rollback",
        help=VERBS["rollback"],
        epilog=examples(
            "dualstack rollback --stack prod                # to 0%: prints the fastest path",
            "dualstack rollback --stack prod --to 5 --commit",
            'dualstack rollback --emergency --stack prod --reason "p99 doubled"',
            "dualstack rollback --emergency --all --dry-run",
        ),
        description="Set ascendWeight (a fleet member's, --service; every service's, --all) "
        "to 0 or a lower ladder step, with no gate (lowering is "
        "always allowed), the same way promote writes it. Prints the targeted `pulumi up` "
        "that applies only the traffic split, and the break-glass `kubectl patch` with its "
        "caveat. With --commit and no --branch, a taken branch name gets a -2, -3, ... "
        "suffix. Exit 0 done (or already there), 1 the lower weight breaks a mandatory policy "
        "the stack did not break before (file restored), 2 error. With --emergency: traffic "
        "first (cancel the running update, apply the traffic objects, then commit; "
        "docs/operations.md).",
    )
    add_stack_argument(parser)
    add_service_argument(parser)
    parser.add_argument(
        "--to", type=whole_number, default=0, metavar="N", help="target ladder step (default: 0)"
    )
    add_pr_arguments(parser)
    add_emergency_arguments(parser)
    add_output_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    user_root = find_root(Path(args.cwd) if args.cwd else None)
    flags = " --emergency" * args.emergency + " --all" * args.all + " --commit" * args.commit
    stack = "" if args.all and args.emergency else f" -s {args.stack or '(one)'}"
    if args.dry_run:  # prints, changes nothing
        return _run(args, user_root)
    with repo_lock(user_root, f"dualstack rollback{stack}{flags}"):
        return _run(args, user_root)


def _run(args: argparse.Namespace, user_root: Path) -> int:
    """`run`; holding the repository lock (`dualstack.repo.lock`) unless it is a dry run."""
    if args.all and args.service is not None:
        raise UsageError("--all rolls back every service: leave out --service")
    if args.emergency or args.dry_run:
        if args.emergency and not args.all:
            args.stack = one_stack(user_root, args.stack, "rollback")
        return run_emergency(args, user_root)
    args.stack = one_stack(user_root, args.stack, "rollback")
    Moves.of(args, load_fleet(load_stack_config(user_root, args.stack)))  # a bad --to: exit 2
    check_output_file(args.body_file, "--body-file")
    plan = commit_plan(args, user_root)
    result: dict = {}
    with human_text_to_stderr(args), commit_workspace(user_root, plan, args.stack) as root:
        code = _rollback(args, root, plan, result)
    if wants_json(args):
        emit(document("rollback", stack=args.stack, **result))
    return code


@dataclass(frozen=True)
class Moves:
    """What one `rollback` without `--emergency` moves: `targets` {service: weight in %} of
    the services of `fleet` (the stack before) that go down, and how the messages name them:
    one service (`--service`, or the only one), or with `every` (`--all`) each service above
    `to`, all in one edit of the stack file."""

    stack: str
    fleet: Fleet
    targets: dict[str, int]
    every: bool
    to: int
    service: Settings | None = None
    """The one service rolled back (None with `every`)."""

    @classmethod
    def of(cls, args: argparse.Namespace, fleet: Fleet) -> Moves:
        """The moves `args` ask of `fleet`. Raises UsageError for a `--to` that is not a
        ladder step (or, for one service, above its weight; `components.ladder`) and
        SettingsError for an unknown or missing `--service`."""
        if args.all:
            if problem := ladder.step_problem(fleet.first.ladder, args.to):
                raise UsageError(f"--to {args.to}: {problem}")
            targets = {s.name: args.to for s in fleet if s.ascend_weight > args.to}
            return cls(args.stack, fleet, targets, True, args.to)
        service = fleet.member(args.service)
        target = rollback_target(service, args.to)
        moved = {service.name: target} if target != service.ascend_weight else {}
        return cls(args.stack, fleet, moved, False, target, service)

    @property
    def where(self) -> str:
        """`stack prod`, `stack fleet, service chat`."""
        member = self.service.member if self.service is not None else None
        return f"stack {self.stack}" + (f", service {member}" if member is not None else "")

    def start(self) -> dict:
        """The fields of `dualstack/rollback/v1` before anything moved (docs/OUTPUT.md)."""
        if self.every:
            head = {"service": None, "services": []}
            weight = max(s.ascend_weight for s in self.fleet)
        else:
            head = {"service": self.service.member}
            weight = self.service.ascend_weight
        return {
            **head,
            "result": "already-there",
            "fromWeight": weight,
            "toWeight": self.to,
            "method": None,
            "apply": [],
            "preview": None,
            "violations": [],
            "carriedViolations": 0,
            "pr": None,
            "commit": None,
        }

    def nothing(self) -> str:
        """What is said when nothing moves."""
        if self.every:
            return (
                f"Every service of stack {self.stack} is at or below {self.to}% Ascend: "
                "nothing to roll back."
            )
        where = self.where
        return (
            f"{where[0].upper()}{where[1:]} is already at {self.to}% Ascend: nothing to roll back."
        )

    @property
    def branch(self) -> str:
        """The rollback branch's default name."""
        if self.every:
            return f"dualstack/{self.stack}-rollback-all-{self.to}"
        member = f"-{self.service.member}" if self.service.member is not None else ""
        return f"dualstack/{self.stack}{member}-rollback-{self.to}"

    def write(self, root: Path) -> list[WeightChange]:
        """Write the targets into `root`'s stack file and read it back (`dualstack.step.weights`:
        `pulumi config set` for one service, one edit for `--all`); the changes in fleet order."""
        if self.every:
            return change_fleet_weights(root, self.stack, self.fleet, self.targets)
        return [change_weight(root, self.stack, self.service, self.to)]

    def stays(self) -> str:
        """How a refusal says that nothing changed."""
        if self.every:
            return f"stack {self.stack} stays as it was"
        return f"{self.where} stays at {self.service.ascend_weight}%"

    def done(self, changes: list[WeightChange]) -> str:
        """The line saying what moved, and how it was written."""
        method = changes[0].method
        if self.every:
            return (
                f"Rolled back every service of stack {self.stack}: {_listed(changes)} ({method})."
            )
        weight = self.service.ascend_weight
        return f"Rolled back {self.where}: Ascend weight {weight}% -> {self.to}% ({method})."

    def pr_text(
        self, changes: list[WeightChange], preview: str, how: list[str], envelope: list[str] | None
    ) -> tuple[str, str, list[str]]:
        """(PR title, PR body, commit notes)."""
        if self.every:
            title = fleet_rollback_title(self.stack, changes)
            body = fleet_rollback_body(self.stack, changes, preview, how, envelope)
            return title, body, [f"Rollback of every service, no gate: {_listed(changes)}."]
        weight = self.service.ascend_weight
        title, body = rollback_title(changes[0]), rollback_body(changes[0], preview, how, envelope)
        return title, body, [f"Rollback, no gate: {weight}% -> {self.to}%."]


def _listed(changes: list[WeightChange]) -> str:
    """`chat 50% -> 0%, embedder 20% -> 0%`."""
    return ", ".join(
        f"{c.before.name} {c.before.ascend_weight}% -> {c.after.ascend_weight}%" for c in changes
    )


def _branch(root: Path, args: argparse.Namespace, plan: CommitPlan | None, default: str) -> str:
    """The rollback branch: `--branch`, else `default`; with a commit plan and no `--branch`,
    the next free name when `default` exists already (an earlier rollback), said so."""
    branch = args.branch or default
    if plan is None:
        return branch
    chosen = choose_branch(root, branch, free_name=args.branch is None)
    if chosen != branch:
        print(f"Branch {branch} already exists (an earlier rollback?); using {chosen}.")
    return chosen


def _rollback(args: argparse.Namespace, root: Path, plan: CommitPlan | None, result: dict) -> int:
    """The rollback (one service, or `--all`: `Moves`), written in `root` (the user's tree, or
    the default branch's worktree). Fills `result` with the fields of `dualstack/rollback/v1`
    (docs/OUTPUT.md; `services`: [{service, fromWeight, toWeight}] with `--all`)."""
    moves = Moves.of(args, load_fleet(load_stack_config(root, args.stack)))
    result.update(moves.start())
    if not moves.targets:
        print(moves.nothing())
        return 0
    path = stack_path(root, args.stack)
    branch = _branch(root, args, plan, moves.branch)
    base = default_base(root)
    before_side = render_side(root, args.stack)
    original = path.read_bytes()
    changes = moves.write(root)
    if moves.every:
        result["services"] = [
            {"service": c.before.name, "fromWeight": c.before.ascend_weight, "toWeight": moves.to}
            for c in changes
        ]
    preview, preview_text = preview_of(root, args.stack, base, args.service)
    if preview is not None:
        result["preview"] = preview_data(preview)
    result["method"] = changes[0].method
    new, carried = violations_of(preview, before_side, args.stack)
    if new:
        result.update(result="policy-violation", violations=[policy_data(v) for v in new])
        restore_stack_file(root, args.stack, original)
        for line in policy_refusal(new, path.name, moves.stays()):
            print(f"error: {line}", file=sys.stderr)
        return 1
    print(moves.done(changes))
    before = Fleet.of(*(c.before for c in changes))
    how = instructions(before, Fleet.of(*(c.after for c in changes)), args.stack)
    print("\n".join(how))
    if carried:
        print(
            f"Note: {carried} mandatory policy violation(s) were already there before the "
            "rollback; they do not block it (see the preview)."
        )
    commit = None if plan is None else (plan, branch, original)
    envelope = [c.describe() for c in preview.envelope] if preview is not None else None
    title, body, notes = moves.pr_text(changes, preview_text, how, envelope)
    result.update(result="rolled-back", apply=how, carriedViolations=carried)
    result["commit"], opened = publish(args, root, commit, title, body, notes)
    result["pr"] = {"title": title, "body": body, **opened}
    return 0
