"""`dualstack rollback --emergency`: traffic first (`dualstack.step.traffic_first`): stop the
running update, apply the traffic objects alone, then commit; its options, its text, its
`-o json` document (`dualstack/emergency-rollback/v1`) and its pull request (`--open-pr`)."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from components.settings import Fleet
from dualstack.commands.machine import document, emit, human_text_to_stderr, wants_json
from dualstack.commands.output_paths import check_output_file
from dualstack.commands.rollback_policy import preview_of, render_side, violations_of
from dualstack.errors import EXIT_ERROR, UsageError
from dualstack.pulumi_cli import PulumiCliError, pulumi_cli
from dualstack.repo.atomic import write_file
from dualstack.repo.git import GitError
from dualstack.repo.stackfile import stack_path
from dualstack.step.emergency import break_glass_lines
from dualstack.step.pr_text import commit_message, fleet_rollback_body, rollback_body
from dualstack.step.publish import local_branch
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
from dualstack.step.weights import WeightChange


def add_emergency_arguments(parser: argparse.ArgumentParser) -> None:
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
        preview, preview_text = preview_of(root, plan.stack, base)
        new, _ = violations_of(preview, render_side(root, plan.stack, plan.config), plan.stack)
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
