"""`dualstack rollback`: lower the Ascend weight at once (default 0%), always allowed; with
`--emergency`, traffic first (`dualstack.step.traffic_first`): stop, apply, then commit."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from components import ladder
from components.settings import Fleet, Settings, SettingsError, load_fleet
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
from dualstack.commands.stacks import add_service_argument, add_stack_argument, one_stack
from dualstack.errors import EXIT_ERROR, UsageError
from dualstack.offline.policy_results import PolicyResult, blocking, policy_refusal
from dualstack.offline.preview import (
    Preview,
    Side,
    build_preview,
    check_policies,
    format_preview,
    side_of,
)
from dualstack.offline.preview_data import policy_data, preview_data
from dualstack.offline.protocol import JudgeError
from dualstack.offline.render import RenderError, render_fleet
from dualstack.offline.schemas import SchemaError
from dualstack.pulumi_cli import PulumiCliError, pulumi_cli
from dualstack.repo.atomic import write_file
from dualstack.repo.baseref import default_base
from dualstack.repo.git import GitError
from dualstack.repo.lock import repo_lock
from dualstack.repo.stack_config import find_root, load_stack_config
from dualstack.repo.stackfile import StackFileError, stack_path
from dualstack.step.emergency import break_glass_lines, instructions
from dualstack.step.pr_text import (
    commit_message,
    fleet_rollback_body,
    fleet_rollback_title,
    rollback_body,
    rollback_title,
)
from dualstack.step.publish import CommitPlan, choose_branch, commit_workspace, local_branch
from dualstack.step.traffic_first import (
    Applied,
    StackRollback,
    apply_fleet,
    cancel_args,
    check_checkout,
    commit_rollback,
    fleet,
    pending_operations,
    plan_rollback,
    rollback_branch,
    targets_for,
    up_args,
    write_weights,
)
from dualstack.step.weights import (
    WeightChange,
    change_fleet_weights,
    change_weight,
    restore_stack_file,
    rollback_target,
)

NO_PREVIEW = (
    SettingsError,
    RenderError,
    SchemaError,
    StackFileError,
    JudgeError,
    UsageError,
    GitError,
)
"""What keeps a rollback's preview from being built (a base that cannot judge included): the
rollback goes on without it, since a rollback is never blocked."""


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
    _add_emergency_arguments(parser)
    add_output_argument(parser)
    parser.set_defaults(func=run)


def introduced_violations(
    head: Side, before: Side, before_weights: Mapping[str, int], stack: str
) -> tuple[list[PolicyResult], int]:
    """(mandatory violations the rollback introduces, violations it merely carries over).

    Both sides are judged with the weights the rollback moves from ({service: weight in %})
    as the previous weights, so the git base plays no part: a stale or missing base, or a
    violation the stack already had, never blocks an emergency rollback. Lowering the weight
    breaks no policy of the pack today; this is the net for one that would.
    """
    # `before.objects` are the deployed pod templates: a rollback only scales, no surge.
    judged = before.fleet
    after = blocking(check_policies(head, before_weights, stack, judged, before.objects))
    known = {
        (r.policy, r.resource)
        for r in blocking(check_policies(before, before_weights, stack, judged, before.objects))
    }
    new = [v for v in after if (v.policy, v.resource) not in known]
    return new, len(after) - len(new)


def _render_side(root: Path, stack: str, config: dict | None = None) -> Side | None:
    """The stack as rendered from `root`'s stack file (or `config`); None when it does not
    render (the rollback goes on without the policy net)."""
    try:
        fleet, objects = render_fleet(config or load_stack_config(root, stack), stack)
    except (SettingsError, RenderError):
        return None
    return side_of(fleet, objects)


def _preview(
    root: Path, stack: str, base: str | None, service: str | None = None
) -> tuple[Preview | None, str]:
    """(the preview of `root`'s stack judged by `base`, its text); (None, `(no preview: why)`)
    when it cannot be built (`NO_PREVIEW`): a rollback goes on without it."""
    try:
        preview = build_preview(root, stack, base, service=service)
    except NO_PREVIEW as exc:
        return None, f"(no preview: {str(exc).splitlines()[0]})"
    return preview, format_preview(preview)


def _violations(
    head: Preview | None, before: Side | None, stack: str
) -> tuple[list[PolicyResult], int]:
    """`introduced_violations` of the rollback from `before` to the preview's head, judged
    from `before`'s weights; ([], 0) without a preview or a render of `before`."""
    if head is None or before is None:
        return [], 0
    return introduced_violations(head.head, before, before.fleet.weights, stack)


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
    before_side = _render_side(root, args.stack)
    original = path.read_bytes()
    changes = moves.write(root)
    if moves.every:
        result["services"] = [
            {"service": c.before.name, "fromWeight": c.before.ascend_weight, "toWeight": moves.to}
            for c in changes
        ]
    preview, preview_text = _preview(root, args.stack, base, args.service)
    if preview is not None:
        result["preview"] = preview_data(preview)
    result["method"] = changes[0].method
    new, carried = _violations(preview, before_side, args.stack)
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


# ------------------------------------------------------------------ --emergency: traffic first


def _add_emergency_arguments(parser: argparse.ArgumentParser) -> None:
    """`--emergency` (traffic first, then git), `--all`, `--dry-run`, `--reason`."""
    parser.add_argument(
        "--emergency",
        action="store_true",
        help="traffic first: `pulumi cancel` the stack's running update, `pulumi up --target` "
        "the traffic objects alone (no preview, no refresh), then commit the stack file on a "
        "new branch (docs/operations.md)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every service of the stack in one change (a service at or below --to stays); "
        "with --emergency: every service of every stack of the repo at once (every "
        "Pulumi.<stack>.yaml; a stack at or below --to is re-applied as it is)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="with --emergency: print the commands and the commit, change nothing",
    )
    parser.add_argument(
        "--reason",
        default="emergency rollback",
        help="why (goes into the update message, the commit and the PR body)",
    )


def run_emergency(args: argparse.Namespace, root: Path) -> int:
    """`dualstack rollback --emergency`: stop, traffic, then git (dualstack.step.traffic_first).

    Refuses (exit 2, nothing changed) a bad `--to`, a checkout that is not the default
    branch's tip or has uncommitted program changes, a taken `--branch`, a machine without
    the Pulumi CLI. Exit 2 too when a targeted `up` or the commit failed, after saying what
    did and did not happen. With `-o json`, `dualstack/emergency-rollback/v1` on stdout (the
    dry run's too; docs/OUTPUT.md) once the refusals are past.
    """
    if not args.emergency:
        raise UsageError(
            "--dry-run goes with --emergency (dualstack rollback --emergency --dry-run)"
        )
    check_output_file(args.body_file, "--body-file")
    result: dict = {}
    with human_text_to_stderr(args):
        code = _emergency(args, root, result)
    if wants_json(args):
        emit(document("emergency-rollback", **result))
    return code


def _emergency(args: argparse.Namespace, root: Path, result: dict) -> int:
    """`run_emergency`'s work; fills `result` with the fields of `dualstack/emergency-rollback
    /v1` once nothing refuses any more (a refusal raises, and no document is printed)."""
    stacks = fleet(root) if args.all else [args.stack]
    plans = [
        plan_rollback(root, stack, args.to, clamp=args.all, service=args.service)
        for stack in stacks
    ]
    base = check_checkout(root, stacks)
    changed = [plan for plan in plans if plan.changes_git]
    branch = rollback_branch(root, changed, args.branch) if changed else None
    missing = _missing_cli(stacks)
    if args.dry_run:
        _print_dry_run(plans, branch, base, args.reason)
        if missing:
            print(f"Note: the pulumi CLI is not on PATH, so the run would refuse: {missing}.")
        result.update(_emergency_start(plans, args, base, branch, dry_run=True))
        return 0
    if missing:
        raise PulumiCliError(
            "--emergency runs `pulumi cancel` and `pulumi up --target` first, but the pulumi "
            f"CLI is not on PATH; nothing was changed: {missing}"
        )
    result.update(_emergency_start(plans, args, base, branch, dry_run=False))
    clock, started = time.monotonic, time.monotonic()

    def say(line: str) -> None:
        print(f"[{clock() - started:5.1f} s] {line}", flush=True)

    print(f"Emergency rollback, traffic first: {_moves(plans)}")
    write_weights(root, changed)
    for plan in plans:
        say(_written(plan))
    applied = apply_fleet(root, plans, lambda plan: _update_message(plan, args.reason), started)
    for entry, done in zip(result["stacks"], applied, strict=True):
        entry.update(_applied_data(done))
    lines = [
        line
        for plan, done in zip(plans, applied, strict=True)
        for line in _applied_lines(plan, done)
    ]
    for at, line in sorted(lines):
        print(f"[{at:5.1f} s] {line}")
    failed = [done for done in applied if done.error is not None]
    sha = None
    if changed:
        try:
            sha = commit_rollback(root, changed, branch, _commit_message(changed, args.reason))
        except GitError as exc:
            say(f"git: the commit failed ({exc}): commit {_files(changed)} yourself")
        else:
            say(f"git: committed {sha} on branch {branch} ({_files(changed)}, from {base})")
            result["commit"] = {"sha": sha, "branch": branch, "base": base}
    for entry, done in zip(result["stacks"], applied, strict=True):
        if done.stopped.outcome == "cancelled":
            entry["pendingOperations"] = pending_operations(root, done.stack)
            _print_pending(done.stack, entry["pendingOperations"])
    if sha is not None and not args.open_pr:
        print(
            "Push it and open the PR now (a deploy of the default branch restores the old "
            f"weight until it merges):\n  git push -u origin {branch}"
        )
    for done in failed:
        plan = next(p for p in plans if p.stack == done.stack)
        print(f"Break-glass for {done.stack} without Pulumi (see docs/operations.md):")
        lines = break_glass_lines(*_moved_fleets(plan), plan.stack)
        print("\n".join(lines))
        next(e for e in result["stacks"] if e["stack"] == done.stack)["breakGlass"] = lines
    if changed:
        result["pr"] = _print_pr_text(args, root, changed, applied, base)
    unopened = False
    if sha is not None and args.open_pr:
        unopened = not _open_emergency_pr(root, branch, base, result["pr"])
    code = EXIT_ERROR if failed or (changed and sha is None) or unopened else 0
    result["result"] = "failed" if code else "applied"
    return code


def _open_emergency_pr(root: Path, branch: str, base: str, pr: dict) -> bool:
    """--open-pr after the emergency commit: push it and open its pull request (`pr`: its
    title and body, gaining `url` and `via`). False, after an `error:` line saying what to do,
    when that failed: the traffic and the commit stand."""
    from dualstack.step.open_pr import OpenPrError, open_pr

    try:
        opened = open_pr(root, branch, local_branch(root, base), pr["title"], pr["body"])
    except OpenPrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return False
    pr.update(url=opened.url, via=opened.via)
    print(
        f"Pushed {branch} and opened the pull request ({opened.via}): {opened.url}; merge it "
        "now (a deploy of the default branch restores the old weight until it merges)"
    )
    return True


def _emergency_start(
    plans: list[StackRollback],
    args: argparse.Namespace,
    base: str,
    branch: str | None,
    dry_run: bool,
) -> dict:
    """The fields of `dualstack/emergency-rollback/v1` before anything ran (docs/OUTPUT.md):
    each stack's moves and commands (the dry run's targets: the deployed weight unknown)."""
    stacks = []
    for plan in plans:
        targets = targets_for(plan, {})
        stacks.append(
            {
                "stack": plan.stack,
                "services": [
                    {
                        "service": old.name,
                        "fromWeight": old.ascend_weight,
                        "toWeight": new.ascend_weight,
                    }
                    for old, new in plan.moves()
                ],
                "changesGit": plan.changes_git,
                "commands": _commands(plan, targets, args.reason),
                "targets": targets,
                "stopped": None,
                "deployed": None,
                "applied": None,
                "error": None,
                "pendingOperations": [],
                "breakGlass": [],
            }
        )
    return {
        "dryRun": dry_run,
        "result": "dry-run" if dry_run else "failed",
        "reason": args.reason,
        "base": base,
        "branch": branch,
        "stacks": stacks,
        "commit": None,
        "pr": None,
    }


def _applied_data(done: Applied) -> dict:
    """One stack's outcome in `dualstack/emergency-rollback/v1`: the stop, the deployed
    weights read ({service: %}, null when unread), the targets the up applied, its error."""
    return {
        "stopped": {"outcome": done.stopped.outcome, "note": done.stopped.note},
        "deployed": dict(done.deployed) or None,
        "targets": list(done.targets),
        "applied": done.error is None,
        "error": done.error,
    }


def _missing_cli(stacks: list[str]) -> str | None:
    """What to do when `--emergency` cannot take its first step, checked before anything is
    written: the Pulumi CLI is not on PATH (it runs `pulumi cancel` and `pulumi up
    --target`). Names the way out without Pulumi (the break-glass `kubectl patch`). None
    when the CLI is there."""
    if pulumi_cli() is not None:
        return None
    which = f"--stack {stacks[0]}" if len(stacks) == 1 else "--stack S for each stack"
    return (
        "install it (https://www.pulumi.com/docs/install/), or without Pulumi run "
        f"`dualstack rollback {which}` for the break-glass `kubectl patch` "
        "(docs/operations.md, Break-glass)"
    )


def _moved_fleets(plan: StackRollback) -> tuple[Fleet, Fleet]:
    """The rolled-back services of `plan`, before and after, as fleets."""
    return plan.fleet_before.only(plan.services), plan.fleet_after.only(plan.services)


def _move(plan: StackRollback) -> str:
    """`prod 20% -> 0%`, or `fleet (chat 50% -> 0%, embedder 20% -> 0%)`."""
    if not plan.fleet_before.declared:
        return f"{plan.stack} {plan.before.ascend_weight}% -> {plan.after.ascend_weight}%"
    moved = ", ".join(
        f"{old.name} {old.ascend_weight}% -> {new.ascend_weight}%"
        for old, new in plan.moved() or plan.moves()
    )
    return f"{plan.stack} ({moved})"


def _moves(plans: list[StackRollback]) -> str:
    return ", ".join(_move(p) for p in plans)


def _written(plan: StackRollback, verb: str = "wrote") -> str:
    name = stack_path(Path(), plan.stack).name
    if plan.changes_git:
        keys = ", ".join(f"{old.weight_key} {new.ascend_weight}" for old, new in plan.moved())
        return f"{plan.stack}: {verb} {keys} into {name}"
    return (
        f"{plan.stack}: git already holds {plan.after.ascend_weight}%: the traffic is "
        "re-applied, nothing to commit"
    )


def _update_message(plan: StackRollback, reason: str) -> str:
    if plan.fleet_before.declared:
        return f"Emergency rollback of {_move(plan)}: {reason}"
    return f"Emergency rollback of {plan.stack} to {plan.after.ascend_weight}%: {reason}"


def _target_label(urn: str) -> str:
    """`VirtualService inference-traffic-virtual-service` from a URN."""
    types, name = urn.rsplit("::", 2)[-2:]
    return f"{types.rsplit('$', 1)[-1].rsplit(':', 1)[-1]} {name}"


def _deployed_text(fleet: Fleet, deployed: Mapping[str, int]) -> str:
    """The deployed weights as the operator reads them: `chat 50%, embedder 20%` for a
    declared fleet, `20%` for a single-service stack; `unknown` when they were not read."""
    if fleet.declared and deployed:
        return ", ".join(f"{name} {weight}%" for name, weight in deployed.items())
    weight = deployed.get(fleet.first.name) if not fleet.declared else None
    return "unknown" if weight is None else f"{weight}%"


def _applied_lines(plan: StackRollback, result: Applied) -> list[tuple[float, str]]:
    """(seconds from the start, line) for the stop and the traffic step of one stack."""
    deployed = _deployed_text(plan.fleet_before, result.deployed)
    objects = ", ".join(_target_label(urn) for urn in result.targets)
    stop = f"{result.stack}: {result.stopped.describe(result.stack)}; deployed {deployed}"
    if result.error is None:
        traffic = f"{result.stack}: traffic applied: {objects} (pulumi up --target)"
    else:
        traffic = f"{result.stack}: the targeted up FAILED: {result.error}"
    return [(result.stopped_at_s, stop), (result.applied_at_s, traffic)]


def _print_pending(stack: str, pending: list[str]) -> None:
    """What the cancelled update left in the state, and how it is settled."""
    if not pending:
        return
    print(f"The cancelled update left {len(pending)} pending operation(s) in {stack}'s state:")
    for operation in pending:
        print(f"  {operation}")
    print(
        "  The next `pulumi up` warns and goes ahead; a `creating` one needs "
        f"`pulumi refresh --yes --skip-preview --clear-pending-creates --stack {stack}` "
        "first (docs/operations.md)."
    )


def _files(plans: list[StackRollback]) -> str:
    return ", ".join(stack_path(Path(), p.stack).name for p in plans)


def _commit_message(plans: list[StackRollback], reason: str) -> str:
    title = "Emergency rollback: " + _moves(plans)
    notes = [
        f"Reason: {reason}",
        "Applied to the cluster first (`dualstack rollback --emergency`: the traffic objects "
        "alone); this commit makes git say the same, so the next deploy keeps it.",
    ]
    return commit_message(title, notes)


def _commands(plan: StackRollback, targets: list[str], reason: str) -> list[str]:
    """The Pulumi commands of one stack's emergency rollback, in order: the cancel, the
    deployed weight's read (beside it), the targeted up over `targets`."""
    output = "services" if plan.fleet_before.declared else "ascendWeight"
    up = up_args(plan.stack, targets, _update_message(plan, reason))
    return [
        f"pulumi {shlex.join(cancel_args(plan.stack))}",
        f"pulumi stack output {output} --json --stack {plan.stack}",
        f"pulumi {shlex.join(up)}",
    ]


def _print_dry_run(plans: list[StackRollback], branch: str | None, base: str, reason: str) -> None:
    print("Dry run: nothing is changed and no command is run.")
    for plan in plans:
        print(_written(plan, "would write"))
        cancel, output, up = _commands(plan, targets_for(plan, {}), reason)
        print(f"  {cancel}\n  {output}  # alongside\n  {up}")
        print(
            "  (targets as if the deployed weight were the ladder's top; the run reads it "
            "and targets NVIDIA's Deployment only when it must grow)"
        )
    changed = [plan for plan in plans if plan.changes_git]
    if changed:
        print(f"git: commit {_files(changed)} on new branch {branch} (from {base})")


def _print_pr_text(
    args: argparse.Namespace,
    root: Path,
    plans: list[StackRollback],
    applied: list[Applied],
    base: str,
) -> dict[str, str]:
    """The PR title and body (the offline preview of each stack, rendered after the traffic
    moved), returned as `{"title", "body"}`; --body-file writes the body. A mandatory policy
    the lower weight would break is reported, not undone: the cluster already carries the
    weight."""
    bodies = []
    for plan in plans:
        result = next(r for r in applied if r.stack == plan.stack)
        method = "dualstack rollback --emergency"
        changes = [WeightChange(plan.stack, old, new, method) for old, new in plan.moved()]
        preview, preview_text = _preview(root, plan.stack, base)
        new, _ = _violations(preview, _render_side(root, plan.stack, plan.config), plan.stack)
        for violation in new:
            print(
                f"warning: policy {violation.policy} fails after the rollback of "
                f"{_move(plan)}: the PR will be blocked until it is fixed"
            )
        up = up_args(plan.stack, result.targets, _update_message(plan, args.reason))
        how = [
            "Applied first (traffic only):",
            f"  pulumi {shlex.join(cancel_args(plan.stack))}",
            f"  pulumi {shlex.join(up)}",
            f"Outcome: {'applied' if result.error is None else 'FAILED: ' + result.error}.",
        ]
        envelope = [c.describe() for c in preview.envelope] if preview is not None else None
        if len(changes) == 1:
            bodies.append(rollback_body(changes[0], preview_text, how, envelope))
        else:
            bodies.append(fleet_rollback_body(plan.stack, changes, preview_text, how, envelope))
    title = "Emergency rollback: " + _moves(plans)
    body = f"Reason: {args.reason}\n\n" + "\n".join(bodies)
    print(f"--- PR title ---\n{title}\n--- PR body ---")
    sys.stdout.write(body)
    if args.body_file is not None:
        write_file(args.body_file, body)
    return {"title": title, "body": body}
