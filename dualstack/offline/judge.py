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

Request (JSON on stdin, protocol 1): `{"protocol": 1, "stack": "prod", "headRoot": DIR,
"headConfig": {...} | null, "headObjects": [...] | null, "previousWeight": N | null (absent:
the base's weight), "ownerApproved": bool}`; `headConfig` null means "read DIR's stack file",
`headObjects` null means "no pack run" (`policy-config`). Response (JSON on stdout):
`{"protocol", "stack", "pack", "baseCommit", "firstDeploy", "base": {ascendWeight, replicas, images,
verifiedImages} | null, "baseObjects", "previousWeight", "ownerApproved", "envelope":
[{fact, before, after, kind}], "packConfig", "results": [PolicyResult fields] | null}`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
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
from dualstack.offline.protocol import BASE_WEIGHT, PROTOCOL, JudgeError
from dualstack.offline.render import RenderError, render_fleet
from dualstack.repo.git import GitError, git
from dualstack.repo.stackfile import StackFileError, read_config, read_config_at

__all__ = ["BASE_WEIGHT", "PROTOCOL", "BaseSide", "HeadData", "JudgeError", "judge"]


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


@dataclass(frozen=True)
class HeadData:
    """The head as data: its stack config, rendered objects (None: judge the config only) and
    tree (`root`, for the program files git compares with the base)."""

    stack: str
    root: Path
    config: dict[str, Any]
    objects: list[dict[str, Any]] | None
    previous_weight: int | str | dict[str, int | None] | None = BASE_WEIGHT
    owner_approved: bool = False


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


def head_of_request(request: Mapping[str, Any]) -> HeadData:
    """A protocol request as `HeadData`. Raises JudgeError naming what is malformed."""
    if request.get("protocol") != PROTOCOL:
        raise JudgeError(f"request speaks protocol {request.get('protocol')!r}, not {PROTOCOL}")
    root = Path(str(request.get("headRoot") or ""))
    stack = str(request.get("stack") or "")
    config = request.get("headConfig")
    if config is None:
        try:
            config = read_config(root, stack)
        except StackFileError as exc:
            raise JudgeError(f"the head's stack file cannot be read: {exc}") from None
    objects = request.get("headObjects")
    if not isinstance(config, dict) or not (objects is None or isinstance(objects, list)):
        raise JudgeError("request: headConfig must be a mapping and headObjects a list")
    previous = request.get("previousWeight", BASE_WEIGHT)
    if isinstance(previous, dict):  # a fleet's deployed weights, {service: weight or null}
        if not all(w is None or isinstance(w, int) for w in previous.values()):
            raise JudgeError(f"request: previousWeight {previous!r} is not a map of weights")
    elif previous is not None and previous != BASE_WEIGHT and not isinstance(previous, int):
        raise JudgeError(f"request: previousWeight {previous!r} is not a weight")
    approved = request.get("ownerApproved", False)
    return HeadData(stack, root, config, objects, previous, approved is True)


def load_pack() -> None:
    """Import the pack and its runner (pulumi_policy) now: the base's judge calls this before
    it waits for the head, so the import overlaps the caller's render instead of following it."""
    import dualstack.offline.policy_config
    import dualstack.offline.policy_run  # noqa: F401


def _service_summary(settings: Settings) -> dict[str, Any]:
    from components.workloads import replicas_for  # the program (pulumi): only when judging

    return {
        "ascendWeight": settings.ascend_weight,
        "replicas": {hw: replicas_for(settings, hw) for hw in HARDWARE},
        "images": {hw: settings.hardware(hw).image for hw in HARDWARE},
        "verifiedImages": settings.verified_facts,
    }


def _summary(fleet: Fleet) -> dict[str, Any]:
    """The base's `base` answer: the single service's summary, or for a fleet the first
    service's beside `services` ({name: the same keys})."""
    summary = _service_summary(fleet.first)
    if fleet.declared:
        summary["services"] = {s.name: _service_summary(s) for s in fleet}
    return summary


def previous_weights(base: Fleet | None, requested: Any) -> int | dict[str, int | None] | None:
    """The deployed weight the pack judges against: `requested` when the caller gave one (a
    number, or a fleet's {service: weight}), else the base's own weights (None without a
    base: a first deploy). Raises JudgeError for one number given for a fleet."""
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
        return {s.name: s.ascend_weight for s in base}
    return base.first.ascend_weight


def judge(base: BaseSide, head: HeadData) -> dict[str, Any]:
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

    if head.stack != base.stack:
        raise JudgeError(f"request is for stack {head.stack!r}, the base for {base.stack!r}")
    try:
        head_fleet: Fleet | None = load_fleet(head.config)
    except SettingsError as exc:
        if base.fleet is None or head.owner_approved:
            raise JudgeError(
                f"the base's code cannot read the head's Pulumi.{head.stack}.yaml: "
                f"{str(exc).splitlines()[0]}"
            ) from None
        head_fleet = None  # the base's facts judge; the envelope diff names the keys
    try:
        files = file_changes(head.root, base.commit)
        files = [*other_stack_changes(head.root, base.commit, base.stack), *files]
        if base.config is not None:
            files = [*stack_settings_changes(head.root, base.commit, base.stack), *files]
    except (GitError, StackFileError) as exc:
        raise JudgeError(f"cannot compare the head's tree with the base: {exc}") from None
    sides = (base.fleet, head_fleet)
    envelope = envelope_changes(base.config, head.config, files, base.stack, sides)
    previous = previous_weights(base.fleet, head.previous_weight)
    config = pack_config(
        head_fleet or base.fleet,  # type: ignore[arg-type]
        previous,
        base.fleet,
        base_objects=base.objects,
        envelope=envelope,
        owner_approved=head.owner_approved,
    )
    results = None
    if head.objects is not None:
        results = [dataclasses.asdict(r) for r in run_policies(head.objects, config, base.stack)]
    return {
        "protocol": PROTOCOL,
        "stack": base.stack,
        "pack": PACK_NAME,
        "baseCommit": base.commit,
        "firstDeploy": base.fleet is None,
        "base": _summary(base.fleet) if base.fleet is not None else None,
        "baseObjects": base.objects,
        "previousWeight": previous,
        "ownerApproved": head.owner_approved,
        "envelope": [change.as_fact() for change in envelope],
        "packConfig": config,
        "results": results,
    }
