"""`dualstack promote`: gate, then move the stack one ladder step up, as a git change."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.settings import Settings, load_settings
from dualstack.cli import VERBS, examples
from dualstack.commands.gate_options import SKIP_GATE_HINT, add_gate_arguments, gate_setup
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
from dualstack.errors import UsageError
from dualstack.gate.criteria import GateReport
from dualstack.gate.report import report_data, verdict
from dualstack.gate.run import run_gate
from dualstack.offline.policy_results import policy_refusal
from dualstack.offline.preview import Preview, build_preview, format_preview
from dualstack.offline.preview_data import policy_data, preview_data
from dualstack.pulumi_cli import StackOutputError, deployed_weight_of
from dualstack.repo.atomic import write_file
from dualstack.repo.baseref import default_base, describe
from dualstack.repo.lock import repo_lock
from dualstack.repo.stack_config import find_root, load_stack_config, require_code_beside
from dualstack.repo.stackfile import stack_path
from dualstack.step.pending import git_step
from dualstack.step.pr_text import promotion_body, promotion_title
from dualstack.step.publish import (
    CommitPlan,
    choose_branch,
    commit_workspace,
)
from dualstack.step.weights import change_weight, restore_stack_file


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "promote",
        help=VERBS["promote"],
        epilog=examples(
            "dualstack promote --stack staging --prometheus http://127.0.0.1:9090 --commit",
            'dualstack promote --stack prod --skip-gate --reason "gate data lost in the outage"',
            "dualstack promote --stack fleet --service chat --body-file pr.md --commit",
            "dualstack promote --stack staging --open-pr  # commit, push, open the PR (gh)",
        ),
        description="Check the promotion gate (unless --skip-gate --reason), set ascendWeight "
        "(a fleet member's services.<name>.ascendWeight, --service) to the next ladder step "
        "(pulumi config set, or an in-place edit of the stack file that keeps its comments), "
        "and print a PR title and body with the gate report and the "
        "offline preview. Refuses while a step is pending (the working tree's weight differs "
        "from the base's or the deployed one). Exit 0 done (or nothing left at 100%), 1 gate "
        "failed or the step breaks a mandatory policy (file restored), 2 error.",
    )
    add_stack_argument(parser)
    add_service_argument(parser)
    add_gate_arguments(parser)
    parser.add_argument("--skip-gate", action="store_true", help="promote without the gate")
    parser.add_argument("--reason", help="why the gate is skipped (required with --skip-gate)")
    parser.add_argument(
        "--base", metavar="GIT_REF", help="preview against this ref (default: as `preview`)"
    )
    add_pr_arguments(parser)
    add_output_argument(parser)
    parser.set_defaults(func=run)


def _check_options(args: argparse.Namespace) -> str | None:
    reason = (args.reason or "").strip()
    if args.skip_gate and not reason:
        raise UsageError('--skip-gate needs --reason "...": the PR records why')
    if reason and not args.skip_gate:
        raise UsageError("--reason is only used with --skip-gate")
    return reason or None


def _where(stack: str, settings: Settings) -> str:
    """`stack prod`, or `stack fleet, service chat` for a fleet member."""
    member = f", service {settings.member}" if settings.member is not None else ""
    return f"stack {stack}{member}"


def _check_pending(
    root: Path, stack: str, settings: Settings, base: str | None, base_ref: str | None
) -> None:
    """Refuse when the working tree's weight already differs from the base's: a step (or a
    rollback) is written but not landed, and another step on top would skip a rung.
    `base_ref`: the `--base` the user gave (named as given), else None."""
    name = describe(root, base_ref) if base_ref is not None else None
    step = git_step(root, stack, settings, base, base_name=name)
    if step is not None:
        raise UsageError(
            f"{_where(stack, settings)}: {settings.weight_key} is {step.where}: a step is "
            f"already pending; {step.to_do} (or revert it) before promoting again"
        )


def _check_deployed(root: Path, stack: str, settings: Settings) -> None:
    """Refuse when the backend's weight differs from git, or when a present Pulumi CLI cannot
    tell it (fail closed); only a missing CLI leaves the deployed weight unknown."""
    deployed = deployed_weight_of(root, stack, settings.member)
    if deployed.failed:
        raise StackOutputError(
            f"{_where(stack, settings)}: deployed weight unreadable: {deployed.note}; promote "
            "needs it to rule out an undeployed step (rollback does not)"
        )
    if deployed.weight is not None and deployed.weight != settings.ascend_weight:
        raise UsageError(
            f"{_where(stack, settings)}: {deployed.compare(settings.ascend_weight)}; deploy or "
            "revert the pending step before promoting again"
        )


def build_checked_preview(
    root: Path, stack: str, base: str | None, original: bytes, service: str | None = None
) -> Preview:
    """The preview of the written stack file (its header `service`'s); on any error the file's
    original bytes are put back before the error goes on."""
    try:
        return build_preview(root, stack, base, service=service)
    except BaseException:
        restore_stack_file(root, stack, original)
        raise


def _commit_note(report: GateReport | None, reason: str | None) -> str:
    """`Gate skipped: <reason>` or `Gate PASSED: requests PASS, error-ratio PASS, ...`."""
    if report is None:
        return f"Gate skipped: {reason}"
    return f"Gate {verdict(report)}: " + ", ".join(f"{c.key} {c.status}" for c in report.criteria)


def run(args: argparse.Namespace) -> int:
    user_root = find_root(Path(args.cwd) if args.cwd else None)
    args.stack = one_stack(user_root, args.stack, "promote")
    with repo_lock(user_root, f"dualstack promote -s {args.stack}{' --commit' * args.commit}"):
        return _run(args, user_root)


def _run(args: argparse.Namespace, user_root: Path) -> int:
    """`run` holding the repository lock (`dualstack.repo.lock`)."""
    load_settings(load_stack_config(user_root, args.stack), service=args.service)
    reason = _check_options(args)
    check_output_file(args.body_file, "--body-file")
    check_output_file(args.markdown, "--markdown")
    require_code_beside(user_root)  # the written step is previewed by the base's judge
    plan = commit_plan(args, user_root)
    result: dict = {}
    with human_text_to_stderr(args), commit_workspace(user_root, plan, args.stack) as root:
        code = _promote(args, root, plan, reason, result)
    if wants_json(args):
        emit(document("promote", stack=args.stack, **result))
    return code


def _promote(
    args: argparse.Namespace,
    root: Path,
    plan: CommitPlan | None,
    reason: str | None,
    result: dict,
) -> int:
    """The promotion, written in `root` (the user's tree, or the default branch's worktree).
    Fills `result` with the fields of `dualstack/promote/v1` (docs/OUTPUT.md)."""
    settings = load_settings(load_stack_config(root, args.stack), service=args.service)
    target = settings.next_step
    where = _where(args.stack, settings)
    result.update(
        service=settings.member,
        result="at-top",
        fromWeight=settings.ascend_weight,
        toWeight=target,
        method=None,
        gate=None,
        gateSkipped=reason,
        preview=None,
        violations=[],
        pr=None,
        commit=None,
    )
    if target is None:
        result["toWeight"] = settings.ascend_weight
        print(
            f"{where[0].upper()}{where[1:]} is at {settings.ascend_weight}% Ascend, the top of "
            "the ladder: nothing left to promote."
        )
        return 0
    path = stack_path(root, args.stack)
    member = f"-{settings.member}" if settings.member is not None else ""
    branch = args.branch or f"dualstack/{args.stack}{member}-ascend-{target}"
    if plan is not None:
        branch = choose_branch(root, branch)
    base = args.base if args.base is not None else default_base(root)
    _check_pending(root, args.stack, settings, base, args.base)
    _check_deployed(root, args.stack, settings)
    report, gate_markdown = None, None
    if reason is None:
        step = (settings.ascend_weight, target)
        setup = gate_setup(args, SKIP_GATE_HINT)
        gate = run_gate(settings, args.stack, setup, markdown=True, step=step)
        report, gate_markdown = gate.report, gate.markdown
        if args.markdown is not None:
            write_file(args.markdown, gate_markdown or "")
        result["gate"] = report_data(report)
        if not report.passed:
            result["result"] = "gate-failed"
            print(
                f"error: gate {verdict(report)}: {where} stays at {settings.ascend_weight}%",
                file=sys.stderr,
            )
            return 1
    original = path.read_bytes()
    change = change_weight(root, args.stack, settings, target)
    preview = build_checked_preview(root, args.stack, base, original, args.service)
    result.update(method=change.method, preview=preview_data(preview))
    if preview.violations:
        result["result"] = "policy-violation"
        result["violations"] = [policy_data(v) for v in preview.violations]
        restore_stack_file(root, args.stack, original)
        stays = f"{where} stays at {settings.ascend_weight}%"
        for line in policy_refusal(preview.violations, path.name, stays):
            print(f"error: {line}", file=sys.stderr)
        return 1
    if report is not None:
        print()  # after the gate table
    print(f"Set {settings.weight_key} {settings.ascend_weight} -> {target}: {change.method}")
    title = promotion_title(change)
    envelope = [c.describe() for c in preview.envelope]
    body = promotion_body(change, gate_markdown, reason, format_preview(preview), envelope)
    commit = None if plan is None else (plan, branch, original)
    result["commit"], opened = publish(
        args, root, commit, title, body, [_commit_note(report, reason)]
    )
    result.update(result="promoted", pr={"title": title, "body": body, **opened})
    return 0
