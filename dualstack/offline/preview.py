"""The reviewer's offline preview: head against base, judged by the base.

`build_preview()` renders the head (the working tree's config and `--set` overrides) with the
running code, which is what `pulumi up` applies, and has the BASE's code judge it
(`dualstack.offline.judge_client`): the base's render, facts, envelope changes and policy pack.
`build_preview_from_base()` is the same from a checkout of the base (the pipelines), the head a
tree rendered by its own code and read as data. Either way the report shows the weight move,
the replica move, the envelope changes fact by fact, each policy's result, each object's change
and a unified diff.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.settings import HARDWARE, Settings, load_settings
from components.settings.evidence import pair_verified
from components.workloads import replicas_for
from dualstack.errors import UsageError
from dualstack.offline.code_identity import require_own_code
from dualstack.offline.diff import ObjectChange, object_changes, unified_diff
from dualstack.offline.envelope import EnvelopeChange
from dualstack.offline.head_render import HeadRender
from dualstack.offline.judge import BASE_WEIGHT, HeadData, JudgeError, base_of_tree, judge
from dualstack.offline.judge_client import BaseJudge, BaseRef, base_judge, request, resolve_base
from dualstack.offline.policy_results import PolicyResult, blocking, report_lines
from dualstack.offline.render import render, sort_key
from dualstack.offline.schemas import validate_objects
from dualstack.repo.stack_config import load_stack_config
from dualstack.repo.stackfile import read_config


@dataclass(frozen=True)
class Side:
    """The head as rendered: its settings (read by the running code) and objects."""

    settings: Settings
    objects: list[dict[str, Any]]


@dataclass(frozen=True)
class BaseView:
    """The base as its own code reported it (`dualstack.offline.judge` response `base`)."""

    commit: str
    weight: int
    replicas: dict[str, int]
    images: dict[str, str]
    verified: list[dict[str, str]]
    objects: list[dict[str, Any]]


@dataclass(frozen=True)
class Preview:
    """What `dualstack preview` reports. `base` is None on a first deploy (no stack file at
    the base); the verdict is the base's either way."""

    stack: str
    head: Side
    base: BaseView | None
    base_label: str
    judge_where: str = ""
    previous_weight: int | None = None
    base_note: str | None = None
    envelope: list[EnvelopeChange] = field(default_factory=list)
    owner_approved: bool = False
    changes: list[ObjectChange] = field(default_factory=list)
    diff: str = ""
    pack: str = "dualstack-migration"
    policy_results: list[PolicyResult] = field(default_factory=list)
    """The base's policy pack's results over the head (see `dualstack.offline.policy_run`)."""

    @property
    def violations(self) -> list[PolicyResult]:
        """The mandatory policy violations: `dualstack preview` exits 1 when there are any."""
        return blocking(self.policy_results)


def check_policies(
    side: Side,
    previous_weight: int | None,
    stack: str,
    base: Settings,
    base_objects: list[dict[str, Any]] | None = None,
) -> list[PolicyResult]:
    """The running code's pack over `side` with `base`'s facts (and its rendered objects: the
    deployed pod templates, so `pool-capacity` counts no surge for a Deployment that only
    scales; None: unknown, every one surges) and an empty envelope.

    Only for comparing two configs that differ in nothing but the weight, under one code
    (`dualstack rollback`: does lowering the weight itself break a policy?). A change under
    review is judged by its base instead (`build_preview`).
    """
    from dualstack.offline.policy_config import pack_config
    from dualstack.offline.policy_run import run_policies

    config = pack_config(side.settings, previous_weight, base, base_objects, envelope=())
    return run_policies(side.objects, config, stack)


def assemble(stack: str, head: Side, label: str, verdict: Mapping[str, Any], where: str) -> Preview:
    """A Preview of the head from the base's judge `verdict` (a protocol response)."""
    try:
        results = [PolicyResult(**r) for r in verdict["results"]]
        envelope = [EnvelopeChange(**c) for c in verdict["envelope"]]
        summary = verdict["base"]
        base = None
        if summary is not None:
            base = BaseView(
                verdict["baseCommit"],
                summary["ascendWeight"],
                summary["replicas"],
                summary["images"],
                summary["verifiedImages"],
                verdict["baseObjects"],
            )
    except (KeyError, TypeError) as exc:
        raise JudgeError(
            f"the base's judge at {label} answered a malformed verdict: {exc}"
        ) from None
    note = None
    if base is None:
        note = f"Pulumi.{stack}.yaml does not exist at {label}: judged as a first deploy"
    objects = base.objects if base is not None else []
    return Preview(
        stack,
        head,
        base,
        label,
        judge_where=where,
        previous_weight=verdict.get("previousWeight"),
        base_note=note,
        envelope=envelope,
        owner_approved=bool(verdict.get("ownerApproved")),
        changes=object_changes(objects, head.objects) if base is not None else [],
        diff=unified_diff(objects, head.objects, "base", "head") if base is not None else "",
        pack=str(verdict.get("pack") or "the base's pack"),
        policy_results=results,
    )


def require_base(base_ref: str | None) -> str:
    """`base_ref`; UsageError when there is none (nothing to judge with: fail closed)."""
    if base_ref is None:
        raise UsageError(
            "no base to judge against (not a git repository, or no commit yet): a change is "
            "judged by its base's code and facts; pass --base GIT_REF"
        )
    return base_ref


def judged_preview(
    root: Path,
    stack: str,
    base: BaseRef,
    base_code: BaseJudge,
    overrides: Iterable[str] = (),
    owner_approved: bool = False,
) -> Preview:
    """Render the head (working tree + overrides) with this code and have `base_code`, the
    base's judge (already started, see `dualstack.offline.judge_client.base_judge`), judge it.

    Raises SettingsError / SchemaError for an invalid head and JudgeError when the base
    cannot judge.
    """
    head_config = load_stack_config(root, stack, overrides)
    head_settings, head_objects = render(head_config, stack)
    base_code.submit(request(stack, root, head_config, head_objects, owner_approved))
    validate_objects(head_objects)  # while the base's pack runs
    verdict = base_code.answer()
    head = Side(head_settings, head_objects)
    return assemble(stack, head, base.label, verdict, base_code.where)


def build_preview(
    root: Path,
    stack: str,
    base_ref: str | None,
    overrides: Iterable[str] = (),
    owner_approved: bool = False,
) -> Preview:
    """The head (working tree + overrides) rendered with this code and judged by the base at
    `base_ref` with its own code and facts.

    Raises UsageError without a base, SettingsError / SchemaError for an invalid head,
    StackFileError for a ref that is not a commit, and JudgeError when the base cannot judge.
    """
    base = resolve_base(root, require_base(base_ref))
    with base_judge(root, base, stack) as base_code:
        return judged_preview(root, stack, base, base_code, overrides, owner_approved)


def build_preview_from_base(
    root: Path, stack: str, head_root: Path, owner_approved: bool = False
) -> Preview:
    """The preview run by the base's code: `root` is the base checkout (this code's tree),
    `head_root` the head's tree, rendered by its own code and read as data. Raises JudgeError
    when the running code is not `root`'s own."""
    require_own_code(root)
    rendering = HeadRender(head_root, stack)
    try:
        base = base_of_tree(root, stack)
    except BaseException:
        rendering.child.stop()
        raise
    head_objects = rendering.finish()
    head_config = read_config(head_root, stack)
    try:
        head_settings = load_settings(head_config)
    except ValueError as exc:
        raise JudgeError(
            f"the base's code cannot read the head's Pulumi.{stack}.yaml: "
            f"{str(exc).splitlines()[0]}; land the program change that reads it first"
        ) from None
    data = HeadData(stack, head_root, head_config, head_objects, BASE_WEIGHT, owner_approved)
    verdict = judge(base, data)
    label = f"{root} ({base.commit[:7]})"
    return assemble(stack, Side(head_settings, head_objects), label, verdict, "this checkout")


def weight_line(preview: Preview) -> str:
    """`Ascend weight: 5% -> 20% (ladder step 2 of 5, next 50%)`."""
    settings = preview.head.settings
    last = len(settings.ladder) - 1
    step = f"ladder step {settings.ladder_position} of {last}"
    step += f", next {settings.next_step}%" if settings.next_step is not None else ", complete"
    before = preview.previous_weight
    moved = f"{before}% -> " if before is not None and before != settings.ascend_weight else ""
    if before == settings.ascend_weight:
        moved = "unchanged at "
    return f"Ascend weight: {moved}{settings.ascend_weight}% ({step})"


def replicas_line(preview: Preview) -> str:
    """`Replicas: nvidia 4 -> 4, ascend 1 -> 2`."""
    parts = []
    for hw in HARDWARE:
        now = replicas_for(preview.head.settings, hw)
        was = preview.base.replicas.get(hw) if preview.base else None
        parts.append(f"{hw} {was} -> {now}" if was is not None and was != now else f"{hw} {now}")
    return "Replicas: " + ", ".join(parts)


def image_line(preview: Preview) -> str:
    """`Ascend image: X (precision-verified at the base)`: the base's record, not the head's."""
    settings = preview.head.settings
    image = settings.ascend.image
    verified = preview.base.verified if preview.base else []
    if pair_verified(verified, settings.nvidia.image, image):
        return f"Ascend image: {image} (precision-verified at the base)"
    return f"Ascend image: {image} (NOT verified at the base)"


def envelope_lines(preview: Preview) -> list[str]:
    """The safety-envelope section: `unchanged`, or each change `fact: before -> after`."""
    if not preview.envelope:
        return ["Safety envelope: unchanged (a migration step only)"]
    count = len(preview.envelope)
    status = (
        "approved by the owners (--owner-approved)"
        if preview.owner_approved
        else "needs the owners' approval"
    )
    lines = [f"Safety envelope: {count} change{'s' * (count != 1)}, {status}"]
    return lines + [f"  {change.describe()}" for change in preview.envelope]


def policy_lines(preview: Preview) -> list[str]:
    """The policy section: summary, then violations, advisories and passes, one per line."""
    before = preview.previous_weight
    context = f"previous weight {before}%" if before is not None else "no previous weight"
    return report_lines(preview.policy_results, context, preview.pack)


def format_preview(preview: Preview) -> str:
    """The human report: header lines, object list, then the unified diff."""
    lines = [f"Stack {preview.stack}", weight_line(preview), replicas_line(preview)]
    lines.append(image_line(preview))
    lines.append(f"Base: {preview.base_label}")
    if preview.judge_where:
        lines.append(f"Judged by the base's code and facts ({preview.judge_where})")
    if preview.base_note:
        lines.append(f"Note: {preview.base_note}")
    lines += envelope_lines(preview)
    lines += policy_lines(preview)
    if preview.base is None:
        lines.append(f"Objects: {len(preview.head.objects)} (no base to compare)")
        lines += [
            f"  {ObjectChange(sort_key(o), 'create').describe()}" for o in preview.head.objects
        ]
    else:
        counts = {
            kind: sum(1 for c in preview.changes if c.change == kind)
            for kind in ("create", "update", "delete")
        }
        lines.append(
            f"Objects: {len(preview.head.objects)} ({counts['update']} changed, "
            f"{counts['create']} added, {counts['delete']} removed)"
        )
        lines += [f"  {change.describe()}" for change in preview.changes]
        lines.append("")
        lines.append(preview.diff.rstrip("\n") if preview.diff else "No changes to any object.")
    return "\n".join(lines) + "\n"
