"""Why a policy passed, in the reviewer's words: the text of a preview's `ok` line.

CrossGuard reports violations only. When a policy found nothing, the offline runner
(`dualstack.offline.policy_run`, the base's, like the pack) asks `pass_note(policy, args)`, so
the reviewer reads `ok no-unsafe-weight-jump [mandatory]: 20% is the ladder step after the
deployed 5%` rather than a bare `ok`. The step policies say it with the numbers they judged
(the same share and facts their validators read); every other policy says what it checked
(its description, an assertion that held). Display text only: nothing here decides a
verdict, and a note that cannot be worked out (a config the validator already refused, say)
falls back to the description.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pulumi_policy import Policy, StackValidationArgs

from policies.common import config_int, config_ladder
from policies.envelope import envelope_changes
from policies.members import members
from policies.stack_view import StackView
from policies.supply_chain import backend_image
from policies.traffic import allowed_increase
from policies.traffic_share import ascend_shares, percent


def _shares_text(resources: list[Any], config: Mapping[str, Any]) -> str | None:
    """`20%`: the largest share any route sends to Ascend pods; None without routes."""
    shares = ascend_shares(StackView.of(resources), config)
    return percent(shares.most) if shares.routes else None


def _jump_one(resources: list[Any], config: Mapping[str, Any]) -> str | None:
    """One service's no-unsafe-weight-jump note."""
    ladder = config_ladder(config)
    previous = config_int(config, "previousWeight", 0, 100)
    max_step = config_int(config, "maxStep", 1, 100)
    shares = ascend_shares(StackView.of(resources), config)
    if not shares.routes:
        return None
    share, limit = shares.most, allowed_increase(previous, ladder, max_step)
    if previous is None:
        return f"{percent(share)} on a first deploy: 0% or the first ladder step {limit}%"
    if share < previous:
        return f"{percent(share)} lowers the deployed {previous}% (decreases are always allowed)"
    if share == previous:
        return f"{percent(share)} is the deployed weight: no increase"
    if max_step is not None:
        return f"{percent(share)} is within maxStep={max_step} points of the deployed {previous}%"
    return f"{percent(share)} is the ladder step after the deployed {previous}%"


def _per_service(note: Callable[[list[Any], Mapping[str, Any]], str | None]) -> Callable:
    """A note judged per service (as `policies.members.per_service` runs the validator):
    `chat: ...; embedder: ...` for a fleet, the one note for a single-service stack."""

    def each(args: StackValidationArgs) -> str | None:
        groups = members(args.resources, args.get_config())
        if len(groups) == 1 and groups[0].name is None:
            return note(groups[0].resources, groups[0].config)
        found = [(m.name, note(m.resources, m.config)) for m in groups]
        return "; ".join(f"{name}: {text}" for name, text in found if text) or None

    return each


def _on_ladder(args: StackValidationArgs) -> str | None:
    config = args.get_config()
    shares = ascend_shares(StackView.of(args.resources), config)
    seen = sorted({r.most for r in shares.routes if r.most is not None}, reverse=True)
    if not seen:
        return None
    ladder = ", ".join(str(step) for step in config_ladder(config))
    sent = ", ".join(percent(share) for share in seen)
    return f"the routes send {sent} to Ascend pods: ladder steps ({ladder})"


def _envelope(args: StackValidationArgs) -> str | None:
    changes = envelope_changes(args.get_config())
    if not changes:
        return "nothing beyond the Ascend weight and the verified image pair changes"
    return f"the owners approved {'; '.join(changes)}, with no raise and no image change"


def _one_raised(args: StackValidationArgs) -> str | None:
    groups = members(args.resources, args.get_config())
    raised = []
    for member in groups:
        share = ascend_shares(StackView.of(member.resources), member.config).most
        previous = config_int(member.config, "previousWeight", 0, 100) or 0
        if share > previous:
            raised.append(f"{member.name} {previous}% -> {percent(share)}")
    return f"raised: {raised[0]} only" if raised else "no service is raised"


def _verified_one(resources: list[Any], config: Mapping[str, Any]) -> str | None:
    """One service's precision-verified-before-promotion note: the served pair the base
    records as verified, or why none is needed (no Ascend traffic, a rollback)."""
    view = StackView.of(resources)
    shares = ascend_shares(view, config)
    if not shares.routes:
        return None
    weight, previous = shares.most, config_int(config, "previousWeight", 0, 100)
    if weight == 0:
        return "Ascend serves no traffic (0%): no verified pair needed yet"
    _, ascend, _ = backend_image(view, config, "ascend")
    _, nvidia, _ = backend_image(view, config, "nvidia")
    if previous is not None and weight < previous:
        return f"a rollback to {percent(weight)} on the deployed images needs no new check"
    return f"the base records the served pair {nvidia} + {ascend} as precision-verified"


NOTES: dict[str, Callable[[StackValidationArgs], str | None]] = {
    "safety-envelope-unchanged": _envelope,
    "ascend-weight-on-ladder": _on_ladder,
    "no-unsafe-weight-jump": _per_service(_jump_one),
    "one-service-raised": _one_raised,
    "precision-verified-before-promotion": _per_service(_verified_one),
}
"""The notes worked out from the numbers, by policy name; the others use the description."""


def pass_note(policy: Policy, args: StackValidationArgs) -> str:
    """Why `policy` passed on `args` (the stack's resources and the policy's config): its
    note from `NOTES`, else (none, or it could not be worked out) its description, which
    says what holds."""
    note = NOTES.get(policy.name)
    try:
        text = note(args) if note is not None else None
    except Exception:  # display text only: never let it hide the pass or crash the run
        text = None
    return text or str(policy.description or "")
