"""The reviewer's offline preview: head against base, judged by the base.

`build_preview()` renders the head (the working tree's config and `--set` overrides) with the
running code, which is what `pulumi up` applies, and has the BASE's code judge it
(`dualstack.offline.judge_client`): the base's render, facts, envelope changes and policy pack.
`build_preview_from_base()` is the same from a checkout of the base (the pipelines), the head a
tree rendered by its own code and read as data. Either way the report shows the weight move,
the replica move, the envelope changes fact by fact, each policy's result, each object that
changes (the unchanged ones in one line) and a unified diff.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.settings import HARDWARE, Fleet, Settings, load_fleet
from components.settings.evidence import pair_verified
from components.workloads import replicas_for
from dualstack.errors import UsageError
from dualstack.offline.code_identity import require_own_code
from dualstack.offline.diff import ObjectChange, object_changes, unified_diff
from dualstack.offline.envelope import EnvelopeChange
from dualstack.offline.head_render import HeadRender
from dualstack.offline.judge import JudgeError, JudgeRequest, Verdict, base_of_tree, judge
from dualstack.offline.judge_client import BaseJudge, BaseRef, base_judge, resolve_base
from dualstack.offline.policy_results import PolicyResult, blocking, report_lines
from dualstack.offline.render import render_fleet, sort_key
from dualstack.offline.schemas import validate_objects
from dualstack.repo.stack_config import load_stack_config
from dualstack.repo.stackfile import read_config


@dataclass(frozen=True)
class Side:
    """A stack as rendered: one service's settings (read by the running code), the objects
    of every service, and the stack's fleet (a single-service stack's: a fleet of one)."""

    settings: Settings
    objects: list[dict[str, Any]]
    fleet: Fleet

    @property
    def members(self) -> list[Settings]:
        """Every service's settings, in stack-file order."""
        return list(self.fleet)


def side_of(fleet: Fleet, objects: list[dict[str, Any]], service: str | None = None) -> Side:
    """A Side of `fleet`'s render, its `settings` those of `service` (default: the only
    service, or the first of a fleet of several). Raises SettingsError for an unknown
    `service`."""
    settings = fleet.member(service) if service is not None or len(fleet) == 1 else fleet.first
    return Side(settings, objects, fleet)


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
class ServiceView:
    """One service of the previewed stack: its head settings, the base's view of it (None: a
    first deploy, or a service new in the head) and its previous (deployed) weight."""

    settings: Settings
    base: BaseView | None
    previous_weight: int | None


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
    services: list[ServiceView] = field(default_factory=list)
    """Every service of the head (one for a single-service stack)."""
    every_service: bool = False
    """True when no service was asked of a fleet of several: the report shows each one."""
    first_deploy: bool = False
    """True when the stack file is absent at the base (nothing to compare the objects with)."""
    base_objects: list[dict[str, Any]] = field(default_factory=list)
    """The base's rendered objects (empty on a first deploy): `--diff` shows changes whole."""

    @property
    def violations(self) -> list[PolicyResult]:
        """The mandatory policy violations: `dualstack preview` exits 1 when there are any."""
        return blocking(self.policy_results)


def check_policies(
    side: Side,
    previous_weights: Mapping[str, int],
    stack: str,
    base: Fleet,
    base_objects: list[dict[str, Any]] | None = None,
) -> list[PolicyResult]:
    """The running code's pack over `side` with `base`'s facts, the deployed weights
    `previous_weights` ({service: weight in %}) and `base`'s rendered objects (the
    deployed pod templates, so `pool-capacity` counts no surge for a Deployment that only
    scales; None: unknown, every one surges) and an empty envelope.

    Only for comparing two configs that differ in nothing but the weight, under one code
    (`dualstack rollback`: does lowering the weight itself break a policy?). A change under
    review is judged by its base instead (`build_preview`).
    """
    from dualstack.offline.policy_config import pack_config
    from dualstack.offline.policy_run import run_policies

    config = pack_config(side.fleet, previous_weights, base, base_objects, envelope=())
    return run_policies(side.objects, config, stack)


def _service_view(settings: Settings, verdict: Verdict, only: bool = False) -> ServiceView:
    """One service as the base's judge `verdict` describes it. `only`: the head's only
    service; a stack without `services` whose base was a fleet of one is that member, whatever
    it was called (the judge's `Fleet.laid_out_as`; the other way, a base without `services`
    describes its one service under any name, `BaseSummary.member`)."""
    name = settings.name
    members = verdict.base.services if verdict.base is not None else None
    if only and settings.member is None and members is not None and len(members) == 1:
        name = next(iter(members))
    previous = verdict.previous_weight
    if isinstance(previous, dict):  # a fleet: this service's deployed weight
        previous = previous.get(name)
    summary = None if verdict.base is None else verdict.base.member(name)
    if verdict.base is not None and summary is None:  # a service new in the head
        previous = None
    base = None
    if summary is not None:
        base = BaseView(
            verdict.base_commit,
            summary.ascend_weight,
            summary.replicas,
            summary.images,
            summary.verified_images,
            verdict.base_objects,
        )
    return ServiceView(settings, base, previous)


def assemble(
    stack: str,
    head: Side,
    label: str,
    verdict: Verdict,
    where: str,
    every_service: bool = False,
) -> Preview:
    """A Preview of the head from the base's judge `verdict`; its header is `head.settings`'s
    service, or each service's with `every_service`."""
    only = len(head.members) == 1
    services = [_service_view(settings, verdict, only) for settings in head.members]
    if verdict.results is None:  # asked with the head's objects: the pack must have run
        raise JudgeError(f"the base's judge at {label} answered a verdict without results")
    chosen = next(v for v in services if v.settings.name == head.settings.name)
    first_deploy = verdict.first_deploy
    note = None
    if first_deploy:
        note = f"Pulumi.{stack}.yaml does not exist at {label}: judged as a first deploy"
    objects = verdict.base_objects if not first_deploy else []
    return Preview(
        stack,
        head,
        chosen.base,
        label,
        judge_where=where,
        previous_weight=chosen.previous_weight,
        base_note=note,
        envelope=verdict.envelope,
        owner_approved=verdict.owner_approved,
        changes=object_changes(objects, head.objects) if not first_deploy else [],
        diff=unified_diff(objects, head.objects, "base", "head") if not first_deploy else "",
        pack=verdict.pack or "the base's pack",
        policy_results=verdict.results,
        services=services,
        every_service=every_service and len(services) > 1,
        first_deploy=first_deploy,
        base_objects=objects,
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
    service: str | None = None,
) -> Preview:
    """Render the head (working tree + overrides) with this code and have `base_code`, the
    base's judge (already started, see `dualstack.offline.judge_client.base_judge`), judge it.
    The report's header is `service`'s (default: the only one; for a fleet of several, each
    service's); the judgement is the fleet's.

    Raises SettingsError / SchemaError for an invalid head and JudgeError when the base
    cannot judge.
    """
    head_config = load_stack_config(root, stack, overrides)
    head_fleet, head_objects = render_fleet(head_config, stack)
    head = side_of(head_fleet, head_objects, service)
    base_code.submit(JudgeRequest(stack, root, head_config, head_objects, owner_approved))
    validate_objects(head_objects)  # while the base's pack runs
    verdict = base_code.answer()
    return assemble(stack, head, base.label, verdict, base_code.where, service is None)


def build_preview(
    root: Path,
    stack: str,
    base_ref: str | None,
    overrides: Iterable[str] = (),
    owner_approved: bool = False,
    service: str | None = None,
) -> Preview:
    """The head (working tree + overrides) rendered with this code and judged by the base at
    `base_ref` with its own code and facts; the header is `service`'s.

    Raises UsageError without a base, SettingsError / SchemaError for an invalid head,
    StackFileError for a ref that is not a commit, and JudgeError when the base cannot judge.
    """
    base = resolve_base(root, require_base(base_ref))
    with base_judge(root, base, stack) as base_code:
        return judged_preview(root, stack, base, base_code, overrides, owner_approved, service)


def build_preview_from_base(
    root: Path,
    stack: str,
    head_root: Path,
    owner_approved: bool = False,
    service: str | None = None,
    head_objects: list[dict[str, Any]] | None = None,
) -> Preview:
    """The preview run by the base's code: `root` is the base checkout (this code's tree),
    `head_root` the head's tree, rendered by its own code and read as data, or, given
    `head_objects` (the untrusted job's render, `dualstack.ci.head_objects`), read as data
    only: nothing of the head runs. Raises JudgeError when the running code is not `root`'s
    own."""
    require_own_code(root)
    if head_objects is not None:
        base = base_of_tree(root, stack)
    else:
        rendering = HeadRender(head_root, stack)
        try:
            base = base_of_tree(root, stack)
        except BaseException:
            rendering.child.stop()
            raise
        head_objects = rendering.finish()
    head_config = read_config(head_root, stack)
    try:
        head = side_of(load_fleet(head_config), head_objects, service)
    except ValueError as exc:
        raise JudgeError(
            f"the base's code cannot read the head's Pulumi.{stack}.yaml: "
            f"{str(exc).splitlines()[0]}; land the program change that reads it first"
        ) from None
    request = JudgeRequest(stack, head_root, head_config, head_objects, owner_approved)
    verdict = judge(base, request)
    label = f"{root} ({base.commit[:7]})"
    return assemble(stack, head, label, verdict, "this checkout", service is None)


def _view(preview: Preview | ServiceView) -> ServiceView:
    if isinstance(preview, ServiceView):
        return preview
    return ServiceView(preview.head.settings, preview.base, preview.previous_weight)


def weight_line(preview: Preview | ServiceView) -> str:
    """`Ascend weight: 5% -> 20% (ladder step 2 of 5, next 50%)`."""
    view = _view(preview)
    settings = view.settings
    last = len(settings.ladder) - 1
    step = f"ladder step {settings.ladder_position} of {last}"
    step += f", next {settings.next_step}%" if settings.next_step is not None else ", complete"
    before = view.previous_weight
    moved = f"{before}% -> " if before is not None and before != settings.ascend_weight else ""
    if before == settings.ascend_weight:
        moved = "unchanged at "
    return f"Ascend weight: {moved}{settings.ascend_weight}% ({step})"


def replicas_line(preview: Preview | ServiceView) -> str:
    """`Replicas: nvidia 4 -> 4, ascend 1 -> 2`."""
    view = _view(preview)
    parts = []
    for hw in HARDWARE:
        now = replicas_for(view.settings, hw)
        was = view.base.replicas.get(hw) if view.base else None
        parts.append(f"{hw} {was} -> {now}" if was is not None and was != now else f"{hw} {now}")
    return "Replicas: " + ", ".join(parts)


def image_line(preview: Preview | ServiceView) -> str:
    """`Ascend image: X (precision-verified at the base)`: the base's record, not the head's."""
    view = _view(preview)
    settings = view.settings
    image = settings.ascend.image
    verified = view.base.verified if view.base else []
    deployed = view.base.images.get("nvidia") if view.base else None
    if pair_verified(verified, settings.nvidia.image, image, deployed):
        return f"Ascend image: {image} (precision-verified at the base)"
    return f"Ascend image: {image} (NOT verified at the base)"


def step_changes(preview: Preview) -> list[str]:
    """The step facts the head changes against the base, which the envelope leaves to the
    other policies: each service's weight and images as `ascendWeight 20 -> 5`, `nvidia.image
    A -> B` (a fleet member's under its key, `services.chat.ascendWeight 0 -> 5`), the base's
    as its own code reported them. A service the base does not hold is left out (the envelope
    lists it)."""
    moved = []
    for view in preview.services:
        if view.base is None:
            continue
        settings = view.settings
        facts = [("ascendWeight", view.base.weight, settings.ascend_weight)]
        facts += [
            (f"{hw}.image", view.base.images.get(hw), settings.hardware(hw).image)
            for hw in HARDWARE
        ]
        moved += [
            f"{settings.config_key(key)} {before} -> {after}"
            for key, before, after in facts
            if before != after
        ]
    return moved


def envelope_lines(preview: Preview) -> list[str]:
    """The safety-envelope section: `unchanged` with the step facts that change (`; the step
    changes ascendWeight 20 -> 5 and nvidia.image A -> B`: `step_changes`), or each change
    `fact: before -> after`."""
    if not preview.envelope:
        moved = step_changes(preview)
        if not moved:
            return ["Safety envelope: unchanged, and so are the weight and images"]
        listed = ", ".join(moved[:-1]) + " and " + moved[-1] if len(moved) > 1 else moved[0]
        return [f"Safety envelope: unchanged; the step changes {listed}"]
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
    if preview.every_service:
        shown = (
            f"{v.settings.name} {'none' if v.previous_weight is None else f'{v.previous_weight}%'}"
            for v in preview.services
        )
        context = "previous weights " + ", ".join(shown)
    return report_lines(preview.policy_results, context, preview.pack)


FULL_CONTEXT = 1_000_000
"""Lines of context `--diff` gives each changed object's diff: the whole object."""


def format_preview(preview: Preview, full: bool = False) -> str:
    """The human report: header lines, object list, then the unified diff.

    As `pulumi preview` does, the objects that do not change are summed up in one line
    (`22 unchanged`) and the diff shows 3 lines of context; `full` (`--diff`) lists every
    object and shows each changed object whole."""
    settings = preview.head.settings
    if preview.every_service:
        lines = [f"Stack {preview.stack}: {len(preview.services)} services"]
        for view in preview.services:
            lines.append(f"Service {view.settings.name}")
            lines += [f"  {line(view)}" for line in (weight_line, replicas_line, image_line)]
    else:
        title = f"Stack {preview.stack}"
        if settings.member is not None:
            title += f", service {settings.name}"
        lines = [title, weight_line(preview), replicas_line(preview)]
        lines.append(image_line(preview))
    lines.append(f"Base: {preview.base_label}")
    if preview.judge_where:
        lines.append(f"Judged by the base's code and facts ({preview.judge_where})")
    if preview.base_note:
        lines.append(f"Note: {preview.base_note}")
    lines += envelope_lines(preview)
    lines += policy_lines(preview)
    if preview.first_deploy:
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
        same = [c for c in preview.changes if c.change == "same"]
        shown = preview.changes if full else [c for c in preview.changes if c.change != "same"]
        lines += [f"  {change.describe()}" for change in shown]
        if same and not full:
            lines.append(f"    {len(same)} unchanged (--diff lists them, with each change whole)")
        diff = preview.diff
        if full and diff:
            objects = preview.head.objects
            diff = unified_diff(preview.base_objects, objects, "base", "head", FULL_CONTEXT)
        lines.append("")
        lines.append(diff.rstrip("\n") if diff else "No changes to any object.")
    return "\n".join(lines) + "\n"
