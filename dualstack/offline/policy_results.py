"""Policy results as the reports show them: one `PolicyResult` per finding, in pack order.

Kept apart from `dualstack.offline.policy_run` (which runs the pack and imports the CrossGuard
SDK): a preview whose pack runs in the base's worktree reads the results without importing the
pack at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["pass", "violation", "advisory", "disabled"]


@dataclass(frozen=True)
class PolicyResult:
    """One line of the policy report.

    `outcome` is `pass` (nothing found, or not applicable: see `message`), `violation` (found
    under a mandatory level: blocks), `advisory` (found under an advisory level: warns) or
    `disabled` (turned off by config). `resource` names the object (`VirtualService
    inference/inference-vs`) or is None for a stack-wide finding.
    """

    policy: str
    enforcement: str
    outcome: Outcome
    message: str = ""
    resource: str | None = None

    @property
    def blocking(self) -> bool:
        """True for a mandatory violation: `dualstack preview` exits 1."""
        return self.outcome == "violation"


def blocking(results: Iterable[PolicyResult]) -> list[PolicyResult]:
    """The mandatory violations among `results`."""
    return [r for r in results if r.blocking]


def policy_refusal(violations: Iterable[PolicyResult], stack_file: str, stays: str) -> list[str]:
    """The error lines when a written step breaks mandatory policies (the file is restored):
    `policy <name>: [<resource>: ]<message>` per violation, then `<stack_file> restored;
    <stays>`."""
    lines = [
        f"policy {v.policy}: {v.resource + ': ' if v.resource else ''}{v.message}"
        for v in violations
    ]
    return [*lines, f"{stack_file} restored; {stays}"]


_MARK = {"violation": "FAIL", "advisory": "WARN", "pass": "ok", "disabled": "off"}


def report_lines(
    results: Sequence[PolicyResult], context: str = "", pack: str = "dualstack-migration"
) -> list[str]:
    """The policy section of a report: a summary line, then failures, warnings, passes.

    `Policies (dualstack-migration, previous weight 5%): 1 violation, 1 advisory, 7 passed`
    then one line per result, e.g.
    `  FAIL no-unsafe-weight-jump [mandatory] VirtualService inference/inference-vs raises...`.
    """
    counts = {o: sum(1 for r in results if r.outcome == o) for o in _MARK}
    checked = {r.policy for r in results}
    passed = sum(
        1 for name in checked if all(r.outcome == "pass" for r in results if r.policy == name)
    )
    summary = [
        f"{counts['violation']} violation{'s' * (counts['violation'] != 1)}",
        f"{counts['advisory']} advisor{'ies' if counts['advisory'] != 1 else 'y'}",
        f"{passed} of {len(checked)} policies passed",
    ]
    if counts["disabled"]:
        summary.append(f"{counts['disabled']} disabled")
    where = f"{pack}, {context}" if context else pack
    lines = [f"Policies ({where}): {', '.join(summary)}"]
    for outcome in ("violation", "advisory", "disabled", "pass"):
        for r in (r for r in results if r.outcome == outcome):
            text = f"  {_MARK[outcome]:<4} {r.policy} [{r.enforcement}]"
            lines.append(f"{text}: {r.message}" if r.message else text)
    return lines
