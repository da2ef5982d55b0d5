"""`dualstack rollback`: lower the Ascend weight at once (default 0%), always allowed; with
`--emergency`, traffic first (`dualstack.step.traffic_first`): stop, apply, then commit."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from components import ladder
from components.settings import Fleet, SettingsError, load_fleet, load_settings
from dualstack.cli import VERBS
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
from dualstack.offline.policy_results import policy_refusal
from dualstack.offline.policy_run import PolicyResult, blocking
from dualstack.offline.preview import (
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
from dualstack.repo.baseref import default_base
from dualstack.repo.git import GitError
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
from dualstack.step.publish import CommitPlan, choose_branch, commit_workspace
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
        description="Set ascendWeight (a fleet member's, --service; every service's, --all) "
        "to 0 or a lower ladder step, with no gate (lowering is "
        "always allowed), the same way promote writes it. Prints the targeted `pulumi up` "
        "that applies only the traffic split, and the break-glass `kubectl patch` with its "
        "caveat. With --commit and no --branch, a taken branch name gets a -2, -3, ... "
        "suffix. Exit 0 done (or already there), 1 the lower weight breaks a mandatory policy "
        "the stack did not break before (file restored), 2 error. With --emergency: traffic "
        "first (cancel the running update, apply the traffic objects, then commit; README "
        "Emergency SOP).",
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
    head: Side, before: Side, before_weight: int | dict[str, int], stack: str
) -> tuple[list[PolicyResult], int]:
    """(mandatory violations the rollback introduces, violations it merely carries over).

    Both sides are judged with the weight the rollback moves from as the previous weight, so
    the git base plays no part: a stale or missing base, or a violation the stack already
    had, never blocks an emergency rollback. Lowering the weight breaks no policy of the
    pack today; this is the net for one that would. A fleet's `before_weight` is
    {service: weight}.
    """
    # `before.objects` are the deployed pod templates: a rollback only scales, no surge.
    judged = before.judged
    after = blocking(check_policies(head, before_weight, stack, judged, before.objects))
    known = {
        (r.policy, r.resource)
        for r in blocking(check_policies(before, before_weight, stack, judged, before.objects))
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


def _weights(fleet: Fleet) -> int | dict[str, int]:
    """The previous weight(s) the policies judge a rollback from: one number for a
    single-service stack, {service: weight} for a fleet."""
    if fleet.declared:
        return {s.name: s.ascend_weight for s in fleet}
    return fleet.first.ascend_weight


def run(args: argparse.Namespace) -> int:
    user_root = find_root(Path(args.cwd) if args.cwd else None)
    if args.all and args.service is not None:
        raise UsageError("--all rolls back every service: leave out --service")
    if args.emergency or args.dry_run:
        if args.emergency and not args.all:
            args.stack = one_stack(user_root, args.stack, "rollback")
        return run_emergency(args, user_root)
    args.stack = one_stack(user_root, args.stack, "rollback")
    config = load_stack_config(user_root, args.stack)
    if args.all:
        _check_all_target(load_fleet(config), args.to)
    else:
        rollback_target(load_settings(config, service=args.service), args.to)
    check_output_file(args.body_file, "--body-file")
    plan = commit_plan(args, user_root)
    result: dict = {}
    with human_text_to_stderr(args), commit_workspace(user_root, plan, args.stack) as root:
        if args.all:
            code = _rollback_all(args, root, plan, result)
        else:
            code = _rollback(args, root, plan, result)
    if wants_json(args):
        emit(document("rollback", stack=args.stack, **result))
    return code


def _check_all_target(fleet: Fleet, to: int) -> None:
    """`--to` with `--all`: a ladder step (services already at or below it stay)."""
    if problem := ladder.step_problem(fleet.first.ladder, to):
        raise UsageError(f"--to {to}: {problem}")


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
    """The rollback, written in `root` (the user's tree, or the default branch's worktree).
    Fills `result` with the fields of `dualstack/rollback/v1` (docs/OUTPUT.md)."""
    settings = load_settings(load_stack_config(root, args.stack), service=args.service)
    target = rollback_target(settings, args.to)
    where = f"stack {args.stack}" + (
        f", service {settings.member}" if settings.member is not None else ""
    )
    result.update(
        service=settings.member,
        result="already-there",
        fromWeight=settings.ascend_weight,
        toWeight=target,
        method=None,
        apply=[],
        preview=None,
        violations=[],
        carriedViolations=0,
        pr=None,
        commit=None,
    )
    if target == settings.ascend_weight:
        print(
            f"{where[0].upper()}{where[1:]} is already at {target}% Ascend: nothing to roll back."
        )
        return 0
    path = stack_path(root, args.stack)
    member = f"-{settings.member}" if settings.member is not None else ""
    branch = _branch(root, args, plan, f"dualstack/{args.stack}{member}-rollback-{target}")
    base = default_base(root)
    before_side = _render_side(root, args.stack)
    original = path.read_bytes()
    change = change_weight(root, args.stack, settings, target)
    try:
        preview = build_preview(root, args.stack, base, service=args.service)
    except NO_PREVIEW as exc:
        preview, preview_text = None, f"(no preview: {str(exc).splitlines()[0]})"
    else:
        preview_text = format_preview(preview)
        result["preview"] = preview_data(preview)
    result["method"] = change.method
    new, carried = [], 0
    if preview is not None and before_side is not None:
        weights = _weights(before_side.fleet) if before_side.fleet else settings.ascend_weight
        new, carried = introduced_violations(preview.head, before_side, weights, args.stack)
    if new:
        result.update(result="policy-violation", violations=[policy_data(v) for v in new])
        restore_stack_file(root, args.stack, original)
        stays = f"{where} stays at {settings.ascend_weight}%"
        for line in policy_refusal(new, path.name, stays):
            print(f"error: {line}", file=sys.stderr)
        return 1
    print(
        f"Rolled back {where}: Ascend weight {settings.ascend_weight}% -> "
        f"{target}% ({change.method})."
    )
    how = instructions(change.before, change.after, args.stack)
    print("\n".join(how))
    if carried:
        print(
            f"Note: {carried} mandatory policy violation(s) were already there before the "
            "rollback; they do not block it (see the preview)."
        )
    title = rollback_title(change)
    notes = [f"Rollback, no gate: {settings.ascend_weight}% -> {target}%."]
    commit = None if plan is None else (plan, branch, original)
    envelope = [c.describe() for c in preview.envelope] if preview is not None else None
    body = rollback_body(change, preview_text, how, envelope)
    result.update(result="rolled-back", apply=how, carriedViolations=carried)
    result["commit"] = publish(args, root, commit, title, body, notes)
    result["pr"] = {"title": title, "body": body}
    return 0


def _rollback_all(
    args: argparse.Namespace, root: Path, plan: CommitPlan | None, result: dict
) -> int:
    """`rollback --all` without `--emergency`: every service above `--to` down to it, in one
    edit of the stack file (one commit with --commit). Fills `result` as `_rollback` does,
    with `services`: [{service, fromWeight, toWeight}] of the services moved."""
    fleet = load_fleet(load_stack_config(root, args.stack))
    weights = {s.name: args.to for s in fleet if s.ascend_weight > args.to}
    result.update(
        service=None,
        services=[],
        result="already-there",
        fromWeight=max(s.ascend_weight for s in fleet),
        toWeight=args.to,
        method=None,
        apply=[],
        preview=None,
        violations=[],
        carriedViolations=0,
        pr=None,
        commit=None,
    )
    if not weights:
        print(
            f"Every service of stack {args.stack} is at or below {args.to}% Ascend: nothing to "
            "roll back."
        )
        return 0
    path = stack_path(root, args.stack)
    branch = _branch(root, args, plan, f"dualstack/{args.stack}-rollback-all-{args.to}")
    base = default_base(root)
    before_side = _render_side(root, args.stack)
    original = path.read_bytes()
    changes = change_fleet_weights(root, args.stack, fleet, weights)
    result["services"] = [
        {"service": c.before.name, "fromWeight": c.before.ascend_weight, "toWeight": args.to}
        for c in changes
    ]
    try:
        preview = build_preview(root, args.stack, base)
    except NO_PREVIEW as exc:
        preview, preview_text = None, f"(no preview: {str(exc).splitlines()[0]})"
    else:
        preview_text = format_preview(preview)
        result["preview"] = preview_data(preview)
    result["method"] = changes[0].method
    new, carried = [], 0
    if preview is not None and before_side is not None and before_side.fleet is not None:
        new, carried = introduced_violations(
            preview.head, before_side, _weights(before_side.fleet), args.stack
        )
    if new:
        result.update(result="policy-violation", violations=[policy_data(v) for v in new])
        restore_stack_file(root, args.stack, original)
        stays = f"stack {args.stack} stays as it was"
        for line in policy_refusal(new, path.name, stays):
            print(f"error: {line}", file=sys.stderr)
        return 1
    moves = ", ".join(f"{c.before.name} {c.before.ascend_weight}% -> {args.to}%" for c in changes)
    print(f"Rolled back every service of stack {args.stack}: {moves} ({changes[0].method}).")
    after = load_fleet(load_stack_config(root, args.stack))
    how = instructions(fleet, after, args.stack)
    print("\n".join(how))
    if carried:
        print(
            f"Note: {carried} mandatory policy violation(s) were already there before the "
            "rollback; they do not block it (see the preview)."
        )
    title = fleet_rollback_title(args.stack, changes)
    notes = [f"Rollback of every service, no gate: {moves}."]
    commit = None if plan is None else (plan, branch, original)
    envelope = [c.describe() for c in preview.envelope] if preview is not None else None
    body = fleet_rollback_body(args.stack, changes, preview_text, how, envelope)
    result.update(result="rolled-back", apply=how, carriedViolations=carried)
    result["commit"] = publish(args, root, commit, title, body, notes)
    result["pr"] = {"title": title, "body": body}
    return 0


# ------------------------------------------------------------------ --emergency: traffic first


def _add_emergency_arguments(parser: argparse.ArgumentParser) -> None:
    """`--emergency` (traffic first, then git), `--all`, `--dry-run`, `--reason`."""
    parser.add_argument(
        "--emergency",
        action="store_true",
        help="traffic first: `pulumi cancel` the stack's running update, `pulumi up --target` "
        "the traffic objects alone (no preview, no refresh), then commit the stack file on a "
        "new branch (README: Emergency SOP)",
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
    branch's tip or has uncommitted program changes, a taken `--branch`. Exit 2 too when a
    targeted `up` or the commit failed, after saying what did and did not happen.
    """
    if not args.emergency:
        raise UsageError(
            "--dry-run goes with --emergency (dualstack rollback --emergency --dry-run)"
        )
    check_output_file(args.body_file, "--body-file")
    stacks = fleet(root) if args.all else [args.stack]
    plans = [
        plan_rollback(root, stack, args.to, clamp=args.all, service=args.service)
        for stack in stacks
    ]
    base = check_checkout(root, stacks)
    changed = [plan for plan in plans if plan.changes_git]
    branch = rollback_branch(root, changed, args.branch) if changed else None
    if args.dry_run:
        _print_dry_run(plans, branch, base, args.reason)
        return 0
    clock, started = time.monotonic, time.monotonic()

    def say(line: str) -> None:
        print(f"[{clock() - started:5.1f} s] {line}", flush=True)

    print(f"Emergency rollback, traffic first: {_moves(plans)}")
    write_weights(root, changed)
    for plan in plans:
        say(_written(plan))
    applied = apply_fleet(root, plans, lambda plan: _update_message(plan, args.reason), started)
    for at, line in sorted(line for result in applied for line in _applied_lines(result)):
        print(f"[{at:5.1f} s] {line}")
    failed = [result for result in applied if result.error is not None]
    sha = None
    if changed:
        try:
            sha = commit_rollback(root, changed, branch, _commit_message(changed, args.reason))
        except GitError as exc:
            say(f"git: the commit failed ({exc}): commit {_files(changed)} yourself")
        else:
            say(f"git: committed {sha} on branch {branch} ({_files(changed)}, from {base})")
    for result in applied:
        if result.stopped.outcome == "cancelled":
            _print_pending(result.stack, pending_operations(root, result.stack))
    if sha is not None:
        print(
            "Push it and open the PR now (a deploy of the default branch restores the old "
            f"weight until it merges):\n  git push -u origin {branch}"
        )
    for result in failed:
        plan = next(p for p in plans if p.stack == result.stack)
        print(f"Break-glass for {result.stack} without Pulumi (see README: Emergency SOP):")
        print("\n".join(break_glass_lines(*_moved_fleets(plan), plan.stack)))
    if changed:
        _print_pr_text(args, root, changed, applied, base)
    return EXIT_ERROR if failed or (changed and sha is None) else 0


def _moved_fleets(plan: StackRollback) -> tuple[Fleet, Fleet]:
    """The rolled-back services of `plan`, before and after, as fleets."""
    declared = plan.fleet_before.declared
    before = Fleet({old.name: old for old, _new in plan.moves()}, declared)
    after = Fleet({new.name: new for _old, new in plan.moves()}, declared)
    return before, after


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


def _applied_lines(result: Applied) -> list[tuple[float, str]]:
    """(seconds from the start, line) for the stop and the traffic step of one stack."""
    if isinstance(result.deployed, dict):
        deployed = ", ".join(f"{name} {weight}%" for name, weight in result.deployed.items())
    else:
        deployed = "unknown" if result.deployed is None else f"{result.deployed}%"
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
        "first (README: Emergency SOP)."
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


def _print_dry_run(plans: list[StackRollback], branch: str | None, base: str, reason: str) -> None:
    print("Dry run: nothing is changed and no command is run.")
    for plan in plans:
        print(_written(plan, "would write"))
        targets = targets_for(plan, None)
        print(f"  pulumi {shlex.join(cancel_args(plan.stack))}")
        output = "services" if plan.fleet_before.declared else "ascendWeight"
        print(f"  pulumi stack output {output} --json --stack {plan.stack}  # alongside")
        print(f"  pulumi {shlex.join(up_args(plan.stack, targets, _update_message(plan, reason)))}")
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
) -> None:
    """The PR title and body (the offline preview of each stack, rendered after the traffic
    moved); --body-file writes the body. A mandatory policy the lower weight would break is
    reported, not undone: the cluster already carries the weight."""
    bodies = []
    for plan in plans:
        result = next(r for r in applied if r.stack == plan.stack)
        method = "dualstack rollback --emergency"
        changes = [WeightChange(plan.stack, old, new, method) for old, new in plan.moved()]
        try:
            preview = build_preview(root, plan.stack, base)
        except NO_PREVIEW as exc:
            preview, preview_text = None, f"(no preview: {str(exc).splitlines()[0]})"
        else:
            preview_text = format_preview(preview)
        before_side = _render_side(root, plan.stack, plan.config)
        if preview is not None and before_side is not None and before_side.fleet is not None:
            new, _ = introduced_violations(
                preview.head, before_side, _weights(before_side.fleet), plan.stack
            )
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
        args.body_file.write_text(body, encoding="utf-8")
