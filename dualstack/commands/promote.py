"""`dualstack promote`: gate, then move the stack one ladder step up, as a git change."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.settings import Settings, load_settings
from dualstack.commands.gate import add_gate_arguments, run_gate
from dualstack.deployed import deployed_weight
from dualstack.gate import GateReport
from dualstack.gate_report import format_markdown, verdict
from dualstack.gitops import check_ready_to_commit, commit_on_new_branch
from dualstack.gitref import default_base
from dualstack.pr_text import commit_message, promotion_body, promotion_title
from dualstack.preview import build_preview, format_preview
from dualstack.project import UsageError, find_root, load_stack_config
from dualstack.stackfile import stack_path
from dualstack.weights import change_weight


def add_pr_arguments(parser: argparse.ArgumentParser) -> None:
    """Options `promote` and `rollback` share: the git branch and commit, the body file."""
    parser.add_argument(
        "--commit",
        action="store_true",
        help="create a branch and commit the stack file on it (only that file)",
    )
    parser.add_argument("--branch", help="branch name for --commit (default: dualstack/...)")
    parser.add_argument(
        "--body-file", type=Path, metavar="FILE", help="write the PR body here (for gh pr create)"
    )


def publish(
    args: argparse.Namespace, root: Path, branch: str, title: str, body: str, notes: list[str]
) -> None:
    """Print the PR title and body, write --body-file, and with --commit commit the step."""
    print(f"--- PR title ---\n{title}\n--- PR body ---")
    sys.stdout.write(body)
    if args.body_file is not None:
        args.body_file.write_text(body, encoding="utf-8")
    if args.commit:
        sha = commit_on_new_branch(
            root, stack_path(root, args.stack), branch, commit_message(title, notes)
        )
        print(f"--- committed {sha} on branch {branch}; push it and open the PR:")
        print(f"git push -u origin {branch}")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "promote",
        help="gate, then raise ascendWeight one ladder step; print the PR text",
        description="Check the promotion gate (unless --skip-gate --reason), set ascendWeight "
        "to the next ladder step (pulumi config set, or an in-place edit of the stack file "
        "that keeps its comments), and print a PR title and body with the gate report and the "
        "offline preview. Exit 0 done (or nothing left at 100%), 1 gate failed, 2 error.",
    )
    parser.add_argument("--stack", default="prod", help="stack name (default: prod)")
    add_gate_arguments(parser)
    parser.add_argument("--skip-gate", action="store_true", help="promote without the gate")
    parser.add_argument("--reason", help="why the gate is skipped (required with --skip-gate)")
    parser.add_argument(
        "--base", metavar="GIT_REF", help="preview against this ref (default: as `preview`)"
    )
    add_pr_arguments(parser)
    parser.set_defaults(func=run)


def _check_options(args: argparse.Namespace) -> str | None:
    reason = (args.reason or "").strip()
    if args.skip_gate and not reason:
        raise UsageError('--skip-gate needs --reason "...": the PR records why')
    if reason and not args.skip_gate:
        raise UsageError("--reason is only used with --skip-gate")
    return reason or None


def _check_deployed(root: Path, stack: str, settings: Settings) -> None:
    deployed = deployed_weight(root, stack)
    if deployed.weight is not None and deployed.weight != settings.ascend_weight:
        raise UsageError(
            f"stack {stack}: {deployed.compare(settings.ascend_weight)}; deploy or revert the "
            "pending step before promoting again"
        )


def _commit_note(report: GateReport | None, reason: str | None) -> str:
    """`Gate skipped: <reason>` or `Gate PASSED: requests PASS, error-ratio PASS, ...`."""
    if report is None:
        return f"Gate skipped: {reason}"
    return f"Gate {verdict(report)}: " + ", ".join(f"{c.key} {c.status}" for c in report.criteria)


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    settings = load_settings(load_stack_config(root, args.stack))
    reason = _check_options(args)
    target = settings.next_step
    if target is None:
        print(
            f"Stack {args.stack} is at {settings.ascend_weight}% Ascend, the top of the ladder: "
            "nothing left to promote."
        )
        return 0
    branch = args.branch or f"dualstack/{args.stack}-ascend-{target}"
    if args.commit:
        check_ready_to_commit(root, stack_path(root, args.stack), branch)
    _check_deployed(root, args.stack, settings)
    report = None
    if reason is None:
        report = run_gate(args, settings)
        if not report.passed:
            print(
                f"error: gate {verdict(report)}: stack {args.stack} stays at "
                f"{settings.ascend_weight}%",
                file=sys.stderr,
            )
            return 1
    base = args.base if args.base is not None else default_base(root)
    preview = build_preview(root, args.stack, base, [f"ascendWeight={target}"])
    change = change_weight(root, args.stack, settings, target)
    if report is not None:
        print()  # after the gate table
    print(f"Set ascendWeight {settings.ascend_weight} -> {target}: {change.method}")
    title = promotion_title(change)
    body = promotion_body(
        change, format_markdown(report) if report else None, reason, format_preview(preview)
    )
    publish(args, root, branch, title, body, [_commit_note(report, reason)])
    return 0
