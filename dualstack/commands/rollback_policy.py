"""What a rollback's policy net shares between `rollback` and `rollback --emergency`: the
preview of the lowered stack (built when it can be, never blocking) and the mandatory
violations the lower weight itself would introduce."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from components.settings import SettingsError
from dualstack.errors import UsageError
from dualstack.offline.policy_results import PolicyResult, blocking
from dualstack.offline.preview import (
    Preview,
    Side,
    build_preview,
    check_policies,
    format_preview,
    side_of,
)
from dualstack.offline.protocol import JudgeError
from dualstack.offline.render import RenderError, render_fleet
from dualstack.offline.schemas import SchemaError
from dualstack.repo.git import GitError
from dualstack.repo.stack_config import load_stack_config
from dualstack.repo.stackfile import StackFileError

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


def introduced_violations(
    head: Side, before: Side, before_weights: Mapping[str, int], stack: str
) -> tuple[list[PolicyResult], int]:
    """(mandatory violations the rollback introduces, violations it merely carries over).

    Both sides are judged with the weights the rollback moves from ({service: weight in %})
    as the previous weights, so the git base plays no part: a stale or missing base, or a
    violation the stack already had, never blocks an emergency rollback. Lowering the weight
    breaks no policy of the pack today; this is the net for one that would.
    """
    # `before.objects` are the deployed pod templates: a rollback only scales, no surge.
    judged = before.fleet
    after = blocking(check_policies(head, before_weights, stack, judged, before.objects))
    known = {
        (r.policy, r.resource)
        for r in blocking(check_policies(before, before_weights, stack, judged, before.objects))
    }
    new = [v for v in after if (v.policy, v.resource) not in known]
    return new, len(after) - len(new)


def render_side(root: Path, stack: str, config: dict | None = None) -> Side | None:
    """The stack as rendered from `root`'s stack file (or `config`); None when it does not
    render (the rollback goes on without the policy net)."""
    try:
        fleet, objects = render_fleet(config or load_stack_config(root, stack), stack)
    except (SettingsError, RenderError):
        return None
    return side_of(fleet, objects)


def preview_of(
    root: Path, stack: str, base: str | None, service: str | None = None
) -> tuple[Preview | None, str]:
    """(the preview of `root`'s stack judged by `base`, its text); (None, `(no preview: why)`)
    when it cannot be built (`NO_PREVIEW`): a rollback goes on without it."""
    try:
        preview = build_preview(root, stack, base, service=service)
    except NO_PREVIEW as exc:
        return None, f"(no preview: {str(exc).splitlines()[0]})"
    return preview, format_preview(preview)


def violations_of(
    head: Preview | None, before: Side | None, stack: str
) -> tuple[list[PolicyResult], int]:
    """`introduced_violations` of the rollback from `before` to the preview's head, judged
    from `before`'s weights; ([], 0) without a preview or a render of `before`."""
    if head is None or before is None:
        return [], 0
    return introduced_violations(head.head, before, before.fleet.weights, stack)
