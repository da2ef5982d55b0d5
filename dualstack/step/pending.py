"""A step written in git but not landed: the weight here against the base's, said one way.

`status` (the pending step) and `promote` (its refusal) both compare a service's weight in
the working tree with its weight at the base (the merge base with the default branch), and
both say where each weight stands, so a step committed on a branch reads `20% committed on
prod-ascend-20` (merge it), not `in the working tree` (commit it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from components.settings import Fleet, Settings, SettingsError, load_fleet
from dualstack.repo.git import git_or_none
from dualstack.repo.stackfile import read_config_at


@dataclass(frozen=True)
class GitStep:
    """A service's weight in the working tree (`weight`) against the base's (`base_weight`):
    `committed` when HEAD holds the working tree's weight (the step is on a branch, else it
    is uncommitted); `head` names HEAD (its branch, else its short id), `base` the base."""

    weight: int
    base_weight: int
    committed: bool
    head: str
    base: str

    @property
    def where(self) -> str:
        """`20% committed on prod-ascend-20, 5% at the merge base with the default branch
        (049fe08)`, or `20% in the working tree (not committed), 5% at HEAD (049fe08)`."""
        here = (
            f"{self.weight}% committed on {self.head}"
            if self.committed
            else f"{self.weight}% in the working tree (not committed)"
        )
        return f"{here}, {self.base_weight}% at {self.base}"

    @property
    def to_do(self) -> str:
        """What lands it: `merge and deploy that step` (committed), else `commit, merge and
        deploy that step`."""
        return ("" if self.committed else "commit, ") + "merge and deploy that step"


def git_step(
    root: Path,
    stack: str,
    settings: Settings,
    base: str | None,
    at_base: Fleet | None = None,
    base_name: str | None = None,
) -> GitStep | None:
    """The step of `settings`' service pending in git, or None: no base, no stack file or no
    such service at the base (a first deploy), a base that no longer validates (the preview
    judges it), or the same weight there. `at_base`: the stack's fleet at `base`, read here
    when None. `base_name`: how to name the base (a `--base` ref); default `HEAD (049fe08)`
    when the base is HEAD, else `the merge base with the default branch (049fe08)`."""
    if base is None:
        return None
    if at_base is None:
        at_base = fleet_at(root, stack, base)
    then = at_base.members.get(settings.name) if at_base is not None else None
    if then is None or then.ascend_weight == settings.ascend_weight:
        return None
    at_head = fleet_at(root, stack, "HEAD")
    held = at_head.members.get(settings.name) if at_head is not None else None
    committed = held is not None and held.ascend_weight == settings.ascend_weight
    head_sha = git_or_none(root, "rev-parse", "HEAD") or ""
    branch = git_or_none(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    head = branch or f"HEAD ({head_sha[:7]})"
    if base_name is None:
        base_sha = git_or_none(root, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
        short = git_or_none(root, "rev-parse", "--short", f"{base}^{{commit}}") or base[:7]
        at_head_commit = base_sha is not None and base_sha == head_sha
        base_name = (
            f"HEAD ({short})"
            if at_head_commit
            else f"the merge base with the default branch ({short})"
        )
    return GitStep(settings.ascend_weight, then.ascend_weight, committed, head, base_name)


def fleet_at(root: Path, stack: str, ref: str) -> Fleet | None:
    """The stack's fleet at `ref`; None when the file is absent there or does not validate."""
    config = read_config_at(root, stack, ref)
    if config is None:
        return None
    try:
        return load_fleet(config)
    except SettingsError:
        return None
