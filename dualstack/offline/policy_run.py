"""Run the CrossGuard pack offline over rendered objects, the way the Pulumi engine runs it.

`dualstack preview` has no engine and no CLI, so this module plays the engine's part for the
policies in `policies/` (pulumi_policy 1.21, `_PolicyAnalyzerServicer.Analyze/AnalyzeStack`):

- each rendered object becomes a resource with the type token the program registered
  (`kubernetes:apps/v1:Deployment`, `kubernetes:networking.istio.io/v1:VirtualService`; the
  render's `Node` objects came from `NodePatch`), props in camelCase with EVERY number a float
  (the engine sends protobuf doubles) wrapped in the SDK's unknown-checking proxies;
- resource policies see each resource, stack policies see all of them once;
- policy config has the `--policy-pack-config` file's shape (`{policy: {key: value}}`, plus
  `enforcementLevel` per policy or under `all`), numbers turned into floats as `Configure` does;
- a violation under a mandatory (or remediate) level blocks, under advisory it only warns; a
  value unknown during preview makes the policy advisory for that run, like the engine;
- a pass carries why (`policies.pass_notes`: the numbers a step policy judged, else what the
  policy checked), which the engine has no word for.

Anything a validator raises besides those is reported as a blocking violation: a crashed policy
never counts as a pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from inspect import isawaitable
from typing import Any, Literal, NamedTuple

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)
from pulumi_policy.policy import _NotApplicableError  # what `args.not_applicable()` raises
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from components.resource_names import kubernetes_type
from components.settings import PROJECT
from dualstack.offline.policy_results import Outcome, PolicyResult, blocking
from dualstack.offline.policy_results import report_lines as _report_lines
from policies import PACK_NAME, POLICIES
from policies.common import describe
from policies.pass_notes import pass_note

__all__ = ["PolicyResult", "blocking", "report_lines", "run_policies"]

BLOCKING_LEVELS = (EnforcementLevel.MANDATORY, EnforcementLevel.REMEDIATE)


def engine_value(value: Any) -> Any:
    """`value` as the engine hands it to a policy: ints (not bools) become floats, recursively."""
    # Concrete types first: rendered objects are plain dicts and lists, and ABC checks are slow.
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, (dict, Mapping)):
        return {str(k): engine_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, Sequence)):
        return [engine_value(v) for v in value]
    return value


def type_token(obj: Mapping[str, Any]) -> str:
    """The Pulumi type token a rendered object was registered with.

    `apps/v1` Deployment -> `kubernetes:apps/v1:Deployment`; core `v1` Service ->
    `kubernetes:core/v1:Service`; the render's `Node` objects -> `kubernetes:core/v1:NodePatch`.
    """
    kind = str(obj.get("kind", ""))
    return kubernetes_type(str(obj.get("apiVersion", "")), "NodePatch" if kind == "Node" else kind)


def policy_resources(
    objects: Iterable[Mapping[str, Any]], stack: str = "offline"
) -> list[PolicyResource]:
    """Rendered objects as `PolicyResource`s with engine-shaped props and stable URNs."""
    resources = []
    no_options = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    for obj in objects:
        token = type_token(obj)
        meta = obj.get("metadata") or {}
        name = "/".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p)
        urn = f"urn:pulumi:{stack}::{PROJECT}::{token}::{name}"
        props = unknown_checking_proxy(engine_value(obj))
        resources.append(PolicyResource(token, props, urn, name, no_options, None, None, [], {}))
    return resources


def enforcement_level(policy: Policy, pack_config: Mapping[str, Any]) -> EnforcementLevel:
    """The level the engine would apply: the policy's config entry, then `all`, then its own."""
    for key in (policy.name, "all"):
        entry = pack_config.get(key)
        level = entry.get("enforcementLevel") if isinstance(entry, Mapping) else entry
        if isinstance(level, str):
            return EnforcementLevel(level)
    return policy.enforcement_level or EnforcementLevel.MANDATORY


def policy_config(policy: Policy, pack_config: Mapping[str, Any]) -> dict[str, Any]:
    """The config one policy receives: its entry minus `enforcementLevel`, numbers as floats."""
    entry = pack_config.get(policy.name)
    if not isinstance(entry, Mapping):
        return {}
    return engine_value({k: v for k, v in entry.items() if k != "enforcementLevel"})


class _Run(NamedTuple):
    """One validation call: the violations as (message, urn) and how the call ended."""

    violations: list[tuple[str, str | None]]
    ending: Literal["done", "not-applicable", "unknown", "crashed"] = "done"
    note: str = ""


def _validate(policy: Policy, args: Any) -> _Run:
    """Run one validation the way the engine does, catching how it may end."""
    found: list[tuple[str, str | None]] = []

    def report(message: str, urn: str | None = None) -> None:
        found.append((message, urn or getattr(args, "urn", None)))

    try:
        result = policy.validate(args, report)
        if isawaitable(result):
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(result)
            finally:
                loop.close()
    except _NotApplicableError as exc:
        return _Run(found, "not-applicable", exc.reason or "no reason given")
    except UnknownValueError as exc:
        return _Run(found, "unknown", exc.message)
    except Exception as exc:  # fail closed: a crashed policy is a violation, never a pass
        return _Run(found, "crashed", f"{type(exc).__name__}: {exc}")
    return _Run(found)


def run_policy(
    policy: Policy,
    resources: Sequence[PolicyResource],
    pack_config: Mapping[str, Any],
    labels: Mapping[str, str],
) -> list[PolicyResult]:
    """Results of one policy over the stack (at least one result per policy)."""
    level = enforcement_level(policy, pack_config)
    if level == EnforcementLevel.DISABLED:
        return [PolicyResult(policy.name, level.value, "disabled", "disabled by policy config")]
    config = policy_config(policy, pack_config)
    if isinstance(policy, ResourceValidationPolicy):
        runs = [
            _validate(
                policy,
                ResourceValidationArgs(
                    r.resource_type, r.props, r.urn, r.name, r.opts, r.provider, config
                ),
            )
            for r in resources
        ]
    else:
        runs = [_validate(policy, StackValidationArgs(list(resources), config))]
    found: Outcome = "violation" if level in BLOCKING_LEVELS else "advisory"
    results = []
    for run in runs:
        for message, urn in run.violations:
            results.append(PolicyResult(policy.name, level.value, found, message, labels.get(urn)))
        if run.ending == "crashed":
            message = f"the policy crashed ({run.note}); treated as a violation"
            results.append(PolicyResult(policy.name, level.value, "violation", message))
        elif run.ending == "unknown":
            results.append(PolicyResult(policy.name, level.value, "advisory", run.note))
    if not results:
        skipped = [run.note for run in runs if run.ending == "not-applicable"]
        if skipped and len(runs) == 1:
            message = f"not applicable: {skipped[0]}"
        else:
            message = pass_note(policy, StackValidationArgs(list(resources), config))
        results.append(PolicyResult(policy.name, level.value, "pass", message))
    return results


def run_policies(
    objects: Iterable[Mapping[str, Any]],
    pack_config: Mapping[str, Any] | None = None,
    stack: str = "offline",
    policies: Sequence[Policy] = POLICIES,
) -> list[PolicyResult]:
    """Run every policy of the pack over rendered objects; results in pack order.

    `objects` are `dualstack.offline.render` objects (dicts, ints as ints); `pack_config` has
    the shape of the `--policy-pack-config` file that
    `dualstack.offline.policy_config.pack_config` builds.
    """
    resources = policy_resources(objects, stack)
    labels = {r.urn: describe(r.resource_type, r.props) for r in resources}
    config = pack_config or {}
    return [result for p in policies for result in run_policy(p, resources, config, labels)]


def report_lines(results: Sequence[PolicyResult], context: str = "") -> list[str]:
    """`dualstack.offline.policy_results.report_lines` for this pack."""
    return _report_lines(results, context, PACK_NAME)
