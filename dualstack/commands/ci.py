"""`dualstack ci ...`: the small steps the GitHub and GitLab pipelines share.

- `changed-stacks --base REF`: touched stacks in deploy order (staging before prod).
- `merge-result --base REF [--worktree DIR]`: HEAD merged into REF (the head GitLab judges).
- `report --dir DIR --stacks "S ..." --output FILE`: the pull-request comment; exit code is
  the check's verdict (0 pass, 1 mandatory violation or failed check, 2 error).
- `junit --dir DIR --stacks "S ..." --output FILE`: the same checks as JUnit XML (each part,
  policy and gate criterion a test case) for GitLab's widget and GitHub's check summary.
- `gitlab-note FILE`: post or update that comment on the merge request.
- `rollback-targets --stack S`: the URNs the emergency rollback's `pulumi up --target` takes.
- `owner-approval [--commit SHA]`: `--owner-approved` when GitLab's approval rules are met.
- `head-tree --base REF --head REF --output DIR`: print `step` or `program` and lay out the
  tree the trusted judge reads as the head (`dualstack.ci.head_tree`): for a step, the base's
  files with the head's stack files; nothing of the head runs either way.
- `gitlab-merge-request --payload FILE`, `gitlab-head-render`, `gitlab-verdict`: the GitLab
  judge project's calls (`dualstack.ci.gitlab_judge`), with GITOPS_PROJECT and
  GITLAB_API_TOKEN.
- `judge --stack S --protocol N`: the judge protocol (`dualstack.offline.judge`), run in the
  BASE's tree by `preview --base` and `policy-config --base`: request on stdin, JSON answer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dualstack.ci.gitlab_note import GitLabNoteError, MergeRequest, upsert_note
from dualstack.ci.junit import junit_xml, suites, summary_markdown
from dualstack.ci.report import read_results, render, verdict
from dualstack.cli import VERBS, examples
from dualstack.commands.arg_types import weight
from dualstack.repo.atomic import append_file, write_file
from dualstack.repo.changes import ChangesError, changed_stacks
from dualstack.repo.merge_result import add_detached, merge_commit
from dualstack.repo.stack_config import find_root

GITLAB_TOKEN_VARIABLE = "GITLAB_API_TOKEN"
"""CI/CD variable holding a project access token (`api` scope) for the merge-request note."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ci",
        help=VERBS["ci"],
        description="Steps shared by .github/workflows and .gitlab-ci.yml.",
        epilog=examples(
            "dualstack ci changed-stacks --base origin/main",
            "dualstack ci rollback-targets --stack prod --deployed-weight 20",
        ),
    )
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")

    changes = _step(
        steps,
        "changed-stacks",
        run_changed_stacks,
        epilog=examples(
            "dualstack ci changed-stacks --base origin/main",
            "dualstack ci changed-stacks --base '' --json  # every stack, as a job matrix",
        ),
        help="stacks touched since BASE, deploy order (non-production first)",
        description="Print the stacks whose Pulumi.<stack>.yaml changed between the merge base "
        "of BASE and HEAD (every stack when the program changed), space-separated or as JSON.",
    )
    changes.add_argument(
        "--base",
        required=True,
        metavar="GIT_REF",
        help="target branch ref or previous commit; empty or all zeros means every stack",
    )
    changes.add_argument("--head", default="HEAD", metavar="GIT_REF")
    changes.add_argument("--json", action="store_true", help="print a JSON list (a job matrix)")

    merged = _step(
        steps,
        "merge-result",
        run_merge_result,
        epilog=examples(
            "dualstack ci merge-result --base origin/main --worktree ../merged",
        ),
        help="the commit HEAD would land as merged into BASE (GitLab judges it)",
        description="Print the commit id of HEAD merged into BASE, built from git objects "
        "alone (git merge-tree; no head code runs): HEAD itself when it already contains BASE. "
        "With --worktree DIR also check it out there (detached), the head the judge reads. "
        "Exit 2 when the merge has conflicts (rebase first).",
    )
    merged.add_argument(
        "--base", required=True, metavar="GIT_REF", help="the target branch's commit"
    )
    merged.add_argument("--head", default="HEAD", metavar="GIT_REF")
    merged.add_argument("--worktree", type=Path, metavar="DIR", help="check the result out here")

    report = _step(
        steps,
        "report",
        run_report,
        epilog=examples(
            'dualstack ci report --dir reports --stacks "staging prod" --output report.md',
        ),
        help="assemble the pull-request comment; exit code is the verdict",
        description="Read DIR/<stack>/<check>.{txt,md,rc,skipped} and write the Markdown "
        "report. Exit 0 pass, 1 a mandatory policy violation or failed check, 2 an error.",
    )
    report.add_argument("--dir", type=Path, required=True, help="where the checks recorded")
    report.add_argument("--stacks", default="", help="the changed stacks, space-separated")
    report.add_argument("--output", type=Path, required=True, help="Markdown file to write")
    report.add_argument("--heading", default="dualstack pull-request check")

    junit = _step(
        steps,
        "junit",
        run_junit,
        epilog=examples(
            'dualstack ci junit --dir reports --stacks "staging prod" --output junit.xml \\\n'
            "--summary summary.md",
        ),
        help="the recorded checks as JUnit XML (GitLab MR widget, GitHub check summary)",
        description="Read DIR/<stack>/ as `report` does, plus the preview's and the gate's "
        "JSON documents (offline-preview.json, gate.json), and write JUnit XML: per stack a "
        "suite of the pipeline parts, one of the policies and one of the gate criteria. "
        "Exit 0 when written, whatever the cases say (`report` gives the verdict).",
    )
    junit.add_argument("--dir", type=Path, required=True, help="where the checks recorded")
    junit.add_argument("--stacks", default="", help="the changed stacks, space-separated")
    junit.add_argument("--output", type=Path, required=True, help="JUnit XML file to write")
    junit.add_argument(
        "--summary", type=Path, metavar="FILE", help="also append a Markdown table to FILE"
    )
    junit.add_argument("--name", default="dualstack pull-request check")

    note = _step(
        steps,
        "gitlab-note",
        run_gitlab_note,
        epilog=examples(
            "dualstack ci gitlab-note report.md",
            "dualstack ci gitlab-note --update-only report.md",
        ),
        help="post or update the report note on the GitLab merge request",
        description=f"Uses CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID and "
        f"{GITLAB_TOKEN_VARIABLE}; skips (exit 0) when the token is not set.",
    )
    note.add_argument("file", type=Path, help="the Markdown report")
    note.add_argument(
        "--update-only",
        action="store_true",
        help="update an earlier report note but create none (no stack changed any more)",
    )

    targets = _step(
        steps,
        "rollback-targets",
        run_rollback_targets,
        epilog=examples(
            "dualstack ci rollback-targets --stack prod --deployed-weight 20",
            "dualstack ci rollback-targets --stack fleet \\\n"
            '--deployed-services \'{"chat": 50, "embedder": 20}\'',
        ),
        help="URNs for the emergency `pulumi up --target`, one per line",
        description="After `dualstack rollback` edited the stack file: the VirtualService, and "
        "NVIDIA's Deployment first when the rollback needs more NVIDIA pods. With "
        "--deployed-weight N (the deploy pipeline): the same URNs when the stack file lowers "
        "the weight below N, else nothing.",
    )
    targets.add_argument("--stack", required=True)
    targets.add_argument(
        "--base", default="HEAD", metavar="GIT_REF", help="the config before the rollback"
    )
    deployed = targets.add_mutually_exclusive_group()
    deployed.add_argument(
        "--deployed-weight",
        type=weight,
        metavar="N",
        help="compare with this deployed weight (%%) instead of --base; prints nothing unless "
        "the stack file's weight is lower",
    )
    deployed.add_argument(
        "--deployed-services",
        metavar="JSON",
        help="a fleet stack: the text of `pulumi stack output services --json`; prints the "
        "targets of the services the stack file lowers below their deployed weight",
    )

    approval = _step(
        steps,
        "owner-approval",
        run_owner_approval,
        epilog=examples(
            "dualstack ci owner-approval",
            "dualstack ci owner-approval --commit 049fe08  # the merged commit's merge request",
        ),
        help="print --owner-approved when the GitLab merge request's approval rules are met",
        description=f"Ask GitLab (CI_API_V4_URL, CI_PROJECT_ID, {GITLAB_TOKEN_VARIABLE}) "
        "whether the merge request (CI_MERGE_REQUEST_IID, or the one that merged --commit) "
        "has its approvals, code owners included; print --owner-approved if so, nothing if "
        "not. Exit 0 answered, 2 GitLab could not tell (treat as not approved).",
    )
    approval.add_argument(
        "--commit", metavar="SHA", help="the merged commit (deploy): find its merge request"
    )

    tree = _step(
        steps,
        "head-tree",
        run_head_tree,
        epilog=examples(
            "dualstack ci head-tree --base origin/main --head refs/dualstack/head --output head",
        ),
        help="print step|program and lay out the tree the trusted judge reads as the head",
        description="Compare the trees of --base and --head. A step changes only stack files "
        "(regular files) and documentation/tests: DIR is then the base's files with the "
        "head's stack files written over them. Anything else is a program change: DIR is a "
        "checkout of --head with symlinks as plain files, to be read as data only. Prints "
        "`step` or `program` on stdout, the program paths on stderr. Exit 2 when git fails.",
    )
    tree.add_argument("--base", required=True, metavar="GIT_REF")
    tree.add_argument("--head", required=True, metavar="GIT_REF")
    tree.add_argument("--output", type=Path, required=True, metavar="DIR")
    tree.add_argument(
        "--venv",
        type=Path,
        metavar="DIR",
        help="for a step: link DIR (the base's virtualenv) as the tree's .venv",
    )

    gl_mr = _step(
        steps,
        "gitlab-merge-request",
        run_gitlab_judge_step,
        epilog=examples(
            "dualstack ci gitlab-merge-request --payload trigger-payload.json",
        ),
        help="GitLab judge: print `IID SHA TARGET` of the merge request a webhook names",
        description="Read the merge-request iid from the webhook payload FILE, then its head "
        "sha and target branch from the API (CI_API_V4_URL, GITOPS_PROJECT, "
        f"{GITLAB_TOKEN_VARIABLE}). Exit 2 when it is not an open merge request.",
        gitlab_step="merge-request",
    )
    gl_mr.add_argument("--payload", type=Path, required=True, metavar="FILE")

    gl_render = _step(
        steps,
        "gitlab-head-render",
        run_gitlab_judge_step,
        epilog=examples(
            "dualstack ci gitlab-head-render --iid 42 --sha 049fe08 --output untrusted",
        ),
        help="GitLab judge: download the merge request's untrusted head-render artifact",
        description="Extract head-render/<stack>.yaml of the successful head-render job of "
        "the merge request's pipeline for SHA into DIR (bounded; nothing else). Exit 2 when "
        "there is none.",
        gitlab_step="head-render",
    )
    gl_render.add_argument("--iid", required=True)
    gl_render.add_argument("--sha", required=True)
    gl_render.add_argument("--output", type=Path, required=True, metavar="DIR")

    gl_verdict = _step(
        steps,
        "gitlab-verdict",
        run_gitlab_judge_step,
        epilog=examples(
            "dualstack ci gitlab-verdict --iid 42 --sha 049fe08 --status 0",
        ),
        help="GitLab judge: approve the merge request at SHA on a pass, withdraw it otherwise",
        description="The judge bot's approval is the required check (approval rule "
        "'dualstack judge'). --status is the report's exit code: 0 approves at --sha.",
        gitlab_step="verdict",
    )
    gl_verdict.add_argument("--iid", required=True)
    gl_verdict.add_argument("--sha", required=True)
    gl_verdict.add_argument("--status", required=True)

    judge = _step(
        steps,
        "judge",
        run_judge,
        epilog=examples(
            "dualstack ci judge --stack prod --protocol 1 < request.json",
        ),
        help="internal: judge a head (JSON on stdin) with this tree's code and facts",
        description="The judge protocol: render this tree's stack (the base), read the head's "
        "stack config and rendered objects as JSON on stdin, and print the base's facts, the "
        "envelope changes, the pack config and the pack's results as JSON. Exit 0 answered, 2 "
        "the base cannot judge (one line on stderr).",
    )
    judge.add_argument("--stack", required=True)
    judge.add_argument(
        "--protocol", type=int, required=True, help="the protocol version the caller speaks"
    )
    judge.add_argument(
        "--cache", type=Path, metavar="DIR", help="keep and reuse this base's render in DIR"
    )


def _step(
    steps: argparse._SubParsersAction,
    name: str,
    func: Callable[[argparse.Namespace], int],
    **options: Any,
) -> argparse.ArgumentParser:
    """The parser of the step `name`, run by `func`: `help`, `description` and `epilog` (its
    examples) go to argparse,
    every other option is a default of the parsed namespace (`gitlab_step=...`)."""
    parser = steps.add_parser(
        name,
        help=options.pop("help"),
        description=options.pop("description"),
        epilog=options.pop("epilog"),
    )
    parser.set_defaults(func=func, **options)
    return parser


def _fail(exc: Exception) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 2


class UnsetVariables(ValueError):
    """CI/CD variables a step needs are unset (or empty): `<what>: A, B unset`, exit 2."""


def _variables(what: str, *names: str) -> list[str]:
    """The values of the CI/CD variables `names`, in order; UnsetVariables naming every one
    that is unset or empty, after `what` (the step, or why they are needed)."""
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        raise UnsetVariables(f"{what}: {', '.join(missing)} unset")
    return [os.environ[name] for name in names]


def _guarded(step: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return step(args)
    except (ChangesError, GitLabNoteError, UnsetVariables) as exc:
        return _fail(exc)


def run_changed_stacks(args: argparse.Namespace) -> int:
    def step(args: argparse.Namespace) -> int:
        root = find_root(Path(args.cwd) if args.cwd else None)
        found = changed_stacks(root, args.base, args.head)
        print(
            f"changed stacks: {' '.join(found.stacks) or 'none'} ({found.reason})", file=sys.stderr
        )
        for stack in found.removed:
            print(
                f"warning: Pulumi.{stack}.yaml was removed; stack {stack} is not deployed. "
                f"Remove it by hand: pulumi destroy --stack {stack}",
                file=sys.stderr,
            )
        print(json.dumps(list(found.stacks)) if args.json else " ".join(found.stacks))
        return 0

    return _guarded(step, args)


def run_merge_result(args: argparse.Namespace) -> int:
    def step(args: argparse.Namespace) -> int:
        root = find_root(Path(args.cwd) if args.cwd else None)
        commit = merge_commit(root, args.base, args.head)
        if args.worktree is not None:
            add_detached(root, args.worktree, commit)
        print(commit)
        return 0

    return _guarded(step, args)


def run_report(args: argparse.Namespace) -> int:
    stacks = args.stacks.replace(",", " ").split()
    results = read_results(args.dir, stacks)
    text = render(results, heading=args.heading)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    write_file(args.output, text)
    table = [line for line in text.splitlines() if line.startswith(("###", "|"))]
    print("\n".join(table))
    return verdict(results)


def run_junit(args: argparse.Namespace) -> int:
    stacks = args.stacks.replace(",", " ").split()
    found = suites(args.dir, read_results(args.dir, stacks))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    write_file(args.output, junit_xml(found, args.name))
    cases = sum(len(s.cases) for s in found)
    print(f"wrote {args.output}: {len(found)} suites, {cases} test cases", file=sys.stderr)
    if args.summary is not None:
        append_file(args.summary, summary_markdown(found))
    return 0


def run_gitlab_note(args: argparse.Namespace) -> int:
    token = os.environ.get(GITLAB_TOKEN_VARIABLE, "")
    if not token:
        print(
            f"gitlab-note: {GITLAB_TOKEN_VARIABLE} is not set; the report stays in the job "
            "log and artifacts",
            file=sys.stderr,
        )
        return 0

    def step(_args: argparse.Namespace) -> int:
        api, project, iid = _variables(
            "not in a merge-request pipeline",
            "CI_API_V4_URL",
            "CI_PROJECT_ID",
            "CI_MERGE_REQUEST_IID",
        )
        body = args.file.read_text(encoding="utf-8")
        mr = MergeRequest(api, project, iid, token)
        action, note_id = upsert_note(mr, body, create=not args.update_only)
        print(f"gitlab-note: {action} note {note_id}", file=sys.stderr)
        return 0

    return _guarded(step, args)


def run_rollback_targets(args: argparse.Namespace) -> int:
    # the program's names (pulumi): only for this step, not for every `dualstack ci ...`
    from dualstack.step.rollback_targets import (
        decrease_targets,
        deployed_weights,
        rollback_targets,
    )

    root = find_root(Path(args.cwd) if args.cwd else None)
    if args.deployed_services is not None or args.deployed_weight is not None:
        from dualstack.pulumi_cli import parse_weights

        services = args.deployed_services
        deployed = deployed_weights(
            root,
            args.stack,
            weight=args.deployed_weight,
            services=None if services is None else parse_weights(services, "--deployed-services"),
        )
        urns = decrease_targets(root, args.stack, deployed)
    else:
        urns = rollback_targets(root, args.stack, args.base)
    if urns:
        print("\n".join(urns))
    return 0


def run_owner_approval(args: argparse.Namespace) -> int:
    from dualstack.ci.approval import FLAG, approved, merge_request_of

    token = os.environ.get(GITLAB_TOKEN_VARIABLE, "")
    if not token:
        print(f"owner-approval: no {GITLAB_TOKEN_VARIABLE}: not approved", file=sys.stderr)
        return 0

    def step(_args: argparse.Namespace) -> int:
        pipeline = [] if args.commit else ["CI_MERGE_REQUEST_IID"]  # deploy: the commit's
        api, project, *iid = _variables(
            "owner-approval", "CI_API_V4_URL", "CI_PROJECT_ID", *pipeline
        )
        iid = merge_request_of(api, project, args.commit, token) if args.commit else iid[0]
        state = approved(MergeRequest(api, project, iid, token))
        print(f"owner-approval: !{iid} {'approved' if state else 'not approved'}", file=sys.stderr)
        if state:
            print(FLAG)
        return 0

    return _guarded(step, args)


def run_head_tree(args: argparse.Namespace) -> int:
    from dualstack.ci.head_tree import build_head_tree

    def step(args: argparse.Namespace) -> int:
        root = find_root(Path(args.cwd) if args.cwd else None)
        venv = args.venv.resolve() if args.venv else None
        found = build_head_tree(root, args.base, args.head, args.output.resolve(), venv)
        if found.program:
            shown = ", ".join(found.program[:5]) + (" ..." if len(found.program) > 5 else "")
            print(f"head-tree: the program changes: {shown}", file=sys.stderr)
        print(found.kind)
        return 0

    return _guarded(step, args)


def run_gitlab_judge_step(args: argparse.Namespace) -> int:
    from dualstack.ci import gitlab_judge

    def step(args: argparse.Namespace) -> int:
        names = ("CI_API_V4_URL", "GITOPS_PROJECT", GITLAB_TOKEN_VARIABLE)
        gitops = gitlab_judge.GitLabProject(*_variables(args.step, *names))
        if args.gitlab_step == "merge-request":
            iid = gitlab_judge.payload_iid(args.payload)
            sha, target = gitlab_judge.merge_request_facts(gitops, iid)
            print(f"{iid} {sha} {target}")
        elif args.gitlab_step == "head-render":
            stacks = gitlab_judge.download_head_render(gitops, args.iid, args.sha, args.output)
            print(f"head-render: {' '.join(stacks) or 'no stack'}", file=sys.stderr)
        else:
            done = gitlab_judge.post_verdict(gitops, args.iid, args.sha, args.status == "0")
            print(f"gitlab-verdict: !{args.iid} {done} at {args.sha[:12]}", file=sys.stderr)
        return 0

    return _guarded(step, args)


def run_judge(args: argparse.Namespace) -> int:
    """Render the base first (the caller renders the head meanwhile), then read the request."""
    from dualstack.offline.judge import (
        PROTOCOL,
        JudgeError,
        JudgeRequest,
        base_of_tree,
        judge,
        load_pack,
    )

    if args.protocol != PROTOCOL:
        return _fail(
            ValueError(f"judge protocol {args.protocol} asked, this code speaks {PROTOCOL}")
        )
    from dualstack.offline.code_identity import require_own_code

    root = find_root(Path(args.cwd) if args.cwd else None)
    try:
        require_own_code(root)
        base = base_of_tree(root, args.stack, args.cache)
        load_pack()  # while the caller still renders the head
        request = JudgeRequest.from_wire(json.loads(sys.stdin.read()))
        verdict = judge(base, request)
    except (JudgeError, json.JSONDecodeError) as exc:
        return _fail(exc)
    json.dump(verdict.to_wire(), sys.stdout)
    return 0
