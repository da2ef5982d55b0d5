"""The judge protocol: the BASE's code judges the head, which it reads only as data.

A pull request never judges itself. The code, the policy pack and the facts that judge a
change come from its base, so this module is always run from the base's tree:

- `dualstack preview --base REF` / `dualstack policy-config --base REF` start it in a
  temporary worktree of REF as `python -m dualstack ci judge --stack S --protocol 1`
  (`dualstack.offline.judge_client`), or in-process when the running code is byte for byte
  the base's (`dualstack.offline.code_identity`);
- the pipelines run it from a checkout of the base (`--head DIR`), the head's tree read as data.

`prepare_base()` renders the base with this code (it needs nothing of the head, so it runs
while the caller renders the head), then `judge()` takes the head's stack config and rendered
objects as data, computes the facts from the base, the envelope changes (config keys and
program files, `dualstack.offline.envelope`) and the pack config, and runs this pack over the
head's objects.

The request and the response are `dualstack.offline.protocol`'s `JudgeRequest` and `Verdict`
(JSON on stdin and stdout of `dualstack ci judge`, versioned by `PROTOCOL`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.settings import HARDWARE, Fleet, Settings, SettingsError, load_fleet
from dualstack.offline import base_cache
from dualstack.offline.envelope import (
    envelope_changes,
    file_changes,
    other_stack_changes,
    stack_settings_changes,
)
from dualstack.offline.protocol import (
    BASE_WEIGHT,
    PROTOCOL,
    BaseSummary,
    JudgeError,
    JudgeRequest,
    Verdict,
    Weights,
)
from dualstack.offline.render import RenderError, render_fleet
from dualstack.repo.git import GitError, git
from dualstack.repo.stackfile import StackFileError, read_config, read_config_at

__all__ = ["BASE_WEIGHT", "PROTOCOL", "BaseSide", "JudgeError", "JudgeRequest", "Verdict", "judge"]


@dataclass(frozen=True)
class BaseSide:
    """The base as its own code sees it: `config` None when `Pulumi.<stack>.yaml` is absent
    at `commit` (a first deploy), else its fleet of services and rendered objects
    (`settings`: the first service's, for what every service shares)."""

    commit: str
    stack: str
    config: dict[str, Any] | None
    fleet: Fleet | None
    objects: list[dict[str, Any]]

    @property
    def settings(self) -> Settings | None:
        """The first service's settings (the only one's in a single-service stack)."""
        return self.fleet.first if self.fleet is not None else None


def prepare_base(
    commit: str,
    stack: str,
    config: dict[str, Any] | None,
    rendered: list[dict[str, Any]] | None = None,
) -> BaseSide:
    """Render the base's stack `config` (None: absent) with this code; `rendered`: the objects
    of an earlier render of the same commit (`dualstack.offline.base_cache`), not redone.

    Raises JudgeError when the base's config does not validate or render under its own code:
    the base cannot judge, which is never a first deploy.
    """
    if config is None:
        return BaseSide(commit, stack, None, None, [])
    try:
        if rendered is not None:
            return BaseSide(commit, stack, config, load_fleet(config), rendered)
        fleet, objects = render_fleet(config, stack)
    except (SettingsError, RenderError) as exc:
        raise JudgeError(
            f"Pulumi.{stack}.yaml at the base {commit[:12]} does not render under the base's "
            f"own code ({str(exc).splitlines()[0]}), so the base cannot judge (fail closed)"
        ) from None
    return BaseSide(commit, stack, config, fleet, objects)


def base_of_tree(root: Path, stack: str, cache: Path | None = None) -> BaseSide:
    """The base checked out at `root` (this code's own tree): its HEAD commit's stack file,
    rendered (or read from `cache`, `dualstack.offline.base_cache`, and stored there).

    Raises JudgeError when `root` is not a git work tree with a commit.
    """
    try:
        commit = git(root, "rev-parse", "--verify", "HEAD^{commit}").strip()
        config = read_config_at(root, stack, commit)
    except (GitError, StackFileError) as exc:
        raise JudgeError(f"the base checkout {root} cannot be read: {exc}") from None
    return cached_base(cache, commit, stack, config)


def cached_base(
    cache: Path | None, commit: str, stack: str, config: dict[str, Any] | None
) -> BaseSide:
    """`prepare_base`, the render read from and kept in `cache` (None: no cache)."""
    if cache is None or config is None:
        return prepare_base(commit, stack, config)
    rendered = base_cache.load(cache, commit, stack, PROTOCOL)
    side = prepare_base(commit, stack, config, rendered)
    if rendered is None:
        base_cache.store(cache, commit, stack, PROTOCOL, side.objects)
    return side


def head_config(request: JudgeRequest) -> dict[str, Any]:
    """The head's stack config: the request's, else read from its tree (`headConfig` null).
    Raises JudgeError when the stack file cannot be read."""
    if request.head_config is not None:
        return request.head_config
    try:
        return read_config(request.head_root, request.stack)
    except StackFileError as exc:
        raise JudgeError(f"the head's stack file cannot be read: {exc}") from None


def load_pack() -> None:
    """Import the pack and its runner (pulumi_policy) now: the base's judge calls this before
    it waits for the head, so the import overlaps the caller's render instead of following it."""
    import dualstack.offline.policy_config
    import dualstack.offline.policy_run  # noqa: F401


def _service_summary(settings: Settings) -> BaseSummary:
    from components.workloads import replicas_for  # only when judging

    return BaseSummary(
        settings.ascend_weight,
        {hw: replicas_for(settings, hw) for hw in HARDWARE},
        {hw: settings.hardware(hw).image for hw in HARDWARE},
        settings.verified_facts,
    )


def _summary(fleet: Fleet) -> BaseSummary:
    """The verdict's `base`: the single service's summary, or for a fleet the first
    service's beside `services` ({name: the same})."""
    summary = _service_summary(fleet.first)
    if fleet.declared:
        services = {s.name: _service_summary(s) for s in fleet}
        summary = dataclasses.replace(summary, services=services)
    return summary


def wire_previous(base: Fleet | None, requested: Weights | str) -> Weights:
    """The deployed weight as the protocol says it (the verdict's `previousWeight`):
    `requested` when the caller gave one (a number, or a fleet's {service: weight}), else the
    base's own (a declared fleet's {service: weight}, a single-service stack's number, None
    without a base: a first deploy). Raises JudgeError for one number given for a fleet."""
    if requested != BASE_WEIGHT:
        if isinstance(requested, int) and base is not None and base.declared:
            raise JudgeError(
                f"previousWeight {requested} is one number, but the stack holds the services "
                f"{', '.join(base.names)}: give {{service: weight}} (`pulumi stack output "
                "services`)"
            )
        return requested
    if base is None:
        return None
    if base.declared:
        return base.weights
    return base.first.ascend_weight


def previous_weights(wire: Weights, judged: Fleet, base: Fleet | None) -> dict[str, int | None]:
    """The protocol's `previousWeight` (`wire_previous`) as {service: weight in %} of the
    `judged` stack (its `base` as the base's code reads it): the one place its shapes become
    one. A map is as given while either side declares `services`, else it says nothing ({}).
    One number is a single-service stack's: the base's one service's (under its name, also
    when the judged stack declares `services`: `pack_config` maps it to the member that keeps
    it, `one_service`), or without a base the judged one's; it says nothing of a declared
    fleet ({}). Null: nothing deployed ({})."""
    if isinstance(wire, dict):
        return dict(wire) if judged.declared or (base is not None and base.declared) else {}
    single = base if base is not None else judged
    if wire is None or single.declared:
        return {}
    return {single.first.name: wire}


def judge(base: BaseSide, head: JudgeRequest) -> Verdict:
    """Judge `head` with this code and the facts of `base`; the protocol's response.

    The facts are the base's; the head's count only on a first deploy (nothing else exists)
    or when the owners approved the envelope change that brings them, and then they are read
    by this code from the head's config as data. Raises JudgeError when the head's config
    cannot be read here although it is needed, or git cannot compare the trees.
    """
    # The pack (pulumi_policy, pulumi) is imported here, not at the top: a preview whose judge
    # runs in the base's worktree never loads it in its own process.
    from dualstack.offline.policy_config import pack_config
    from dualstack.offline.policy_run import run_policies
    from policies import PACK_NAME

    config = head_config(head)
    if head.stack != base.stack:
        raise JudgeError(f"request is for stack {head.stack!r}, the base for {base.stack!r}")
    try:
        head_fleet: Fleet | None = load_fleet(config)
    except SettingsError as exc:
        if base.fleet is None or head.owner_approved:
            raise JudgeError(
                f"the base's code cannot read the head's Pulumi.{head.stack}.yaml: "
                f"{str(exc).splitlines()[0]}"
            ) from None
        head_fleet = None  # the base's facts judge; the envelope diff names the keys
    try:
        files = file_changes(head.head_root, base.commit)
        files = [*other_stack_changes(head.head_root, base.commit, base.stack), *files]
        if base.config is not None:
            files = [*stack_settings_changes(head.head_root, base.commit, base.stack), *files]
    except (GitError, StackFileError) as exc:
        raise JudgeError(f"cannot compare the head's tree with the base: {exc}") from None
    sides = (base.fleet, head_fleet)
    envelope = envelope_changes(base.config, config, files, base.stack, sides)
    previous = wire_previous(base.fleet, head.previous_weight)
    judged: Fleet = head_fleet or base.fleet  # type: ignore[assignment]
    pack = pack_config(
        judged,
        previous_weights(previous, judged, base.fleet),
        base.fleet,
        base_objects=base.objects,
        envelope=envelope,
        owner_approved=head.owner_approved,
    )
    results = None
    if head.head_objects is not None:
        results = run_policies(head.head_objects, pack, base.stack)
    return Verdict(
        stack=base.stack,
        pack=PACK_NAME,
        base_commit=base.commit,
        base=_summary(base.fleet) if base.fleet is not None else None,
        base_objects=base.objects,
        previous_weight=previous,
        owner_approved=head.owner_approved,
        envelope=list(envelope),
        pack_config=pack,
        results=results,
    )
