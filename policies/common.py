"""What every policy module shares: reading props and policy config defensively.

Props arrive as the Pulumi engine sends them to a policy pack (pulumi_policy 1.21,
`_PolicyAnalyzerServicer.Analyze`): camelCase keys, every number a float (`replicas: 4.0`,
`weight: 5.0`), maps and lists wrapped in read-only `Mapping`/`Sequence` proxies that raise
`UnknownValueError` for values unknown during preview. So the helpers here test for `Mapping` and
`Sequence`, never `dict`/`list`, and turn whole floats back into ints with `as_int`.

Policy config arrives the same way (JSON numbers become floats) and the SDK applies no schema
defaults, so every key is read through `config_value` with the default declared here. The
defaults equal those of `components/settings/model.py` (a test keeps them in step); the pack imports
nothing from the project so it also runs as a stand-alone pack.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

DEFAULT_LADDER = (0, 5, 20, 50, 80, 100)
"""Allowed Ascend weights in % (the seed article's ladder), used when config has no `ladder`."""

DEFAULT_SUBSETS = {"nvidia": "nvidia", "ascend": "ascend"}
"""Istio subset names of the two backends, used when config has no `nvidiaSubset`/`ascendSubset`."""

WORKLOAD_KINDS = frozenset(
    {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod"}
)
"""Kinds whose props carry a pod spec."""

LADDER_SCHEMA = {
    "type": "array",
    "items": {"type": "integer", "minimum": 0, "maximum": 100},
    "minItems": 2,
    "default": list(DEFAULT_LADDER),
    "description": "Allowed Ascend weights in %, rising strictly from 0 to 100.",
}
SUBSET_SCHEMAS = {
    f"{hw}Subset": {
        "type": "string",
        "default": name,
        "description": f"Istio subset (DestinationRule) that routes to the {hw} backend.",
    }
    for hw, name in DEFAULT_SUBSETS.items()
}
DEFAULT_ASCEND_RESOURCE = "huawei.com/Ascend910"
"""Extended resource Ascend pods request, used when config has no `ascendResource` (the
settings' `ascend.acceleratorResource` default)."""
DEFAULT_PINNING = {"header": "x-dualstack-hardware", "nvidia": "nvidia", "ascend": "ascend"}
"""The settings' `testerPinning` defaults (header and values)."""

PINNING_SCHEMA = {
    "type": "object",
    "properties": {
        "header": {"type": "string"},
        "nvidia": {"type": "string"},
        "ascend": {"type": "string"},
    },
    "default": dict(DEFAULT_PINNING),
    "description": "The tester-pin header and its value per hardware (`testerPinning` of the "
    "BASE stack config): a rule matching exactly that header and value and routing only to "
    "that hardware is left out of the Ascend share.",
}

SHARE_SCHEMAS = {
    "ascendSubset": SUBSET_SCHEMAS["ascendSubset"],
    "ascendResource": {
        "type": "string",
        "default": DEFAULT_ASCEND_RESOURCE,
        "description": "Extended resource the Ascend pods request (`ascend.acceleratorResource`): "
        "a workload whose pods request it is an Ascend backend, whatever subset or Service "
        "routes to it.",
    },
    "testerPinning": PINNING_SCHEMA,
}
"""Config keys of the policies that judge the Ascend share of traffic (`policies.traffic_share`):
which pods are Ascend pods."""
PREVIOUS_WEIGHT_SCHEMA = {
    "type": "integer",
    "minimum": 0,
    "maximum": 100,
    "description": "Ascend weight in % deployed now (`pulumi stack output ascendWeight`); "
    "absent on a first deploy. Written by `dualstack policy-config`.",
}


class ConfigError(ValueError):
    """A policy config value is unusable; the message names the key, the value and the fix."""


Report = Callable[..., None]


def config_errors_are_violations(validator: Callable[[Any, Report], None]) -> Callable:
    """Wrap a validator so a bad policy config is reported as a violation (fail closed).

    Applied as a call, not with `@`, because mutmut does not mutate decorated functions.
    """

    @functools.wraps(validator)
    def wrapper(args: Any, report: Report) -> None:
        try:
            validator(args, report)
        except ConfigError as exc:
            report(f"policy config {exc}; regenerate it with `dualstack policy-config`")

    return wrapper


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` when it is a mapping, else an empty one (missing or malformed props)."""
    return value if isinstance(value, Mapping) else {}


def sequence(value: Any) -> Sequence[Any]:
    """`value` when it is a list (not a string), else an empty tuple."""
    return value if isinstance(value, Sequence) and not isinstance(value, str) else ()


def one(value: Any) -> Mapping[str, Any] | None:
    """The only entry of a one-entry list when it is a mapping, else None."""
    items = sequence(value)
    return mapping(items[0]) if len(items) == 1 and isinstance(items[0], Mapping) else None


def path(value: Any, *keys: str) -> Any:
    """`value[k1][k2]...`, or None as soon as a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def as_int(value: Any) -> int | None:
    """An integer from an int or a whole float (the engine sends 5.0 for 5); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def kind_of(resource_type: str) -> str:
    """The Kubernetes kind of a Pulumi type token: `kubernetes:apps/v1:Deployment` -> Deployment.

    Patches keep their kind plus `Patch` (`NodePatch`); non-Kubernetes tokens give "".
    """
    if not resource_type.startswith("kubernetes:"):
        return ""
    return resource_type.rsplit(":", 1)[-1]


def describe(resource_type: str, props: Mapping[str, Any]) -> str:
    """`Deployment inference/inference-green`: how messages name a resource."""
    meta = mapping(props.get("metadata"))
    name = meta.get("name") or "<unnamed>"
    namespace = meta.get("namespace")
    where = f"{namespace}/{name}" if namespace else str(name)
    return f"{kind_of(resource_type) or resource_type} {where}"


def pod_template_spec(kind: str, props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec inside a workload's props, or None when `kind` carries no pod."""
    if kind not in WORKLOAD_KINDS:
        return None
    if kind == "Pod":
        return mapping(props.get("spec"))
    if kind == "CronJob":
        return mapping(path(props, "spec", "jobTemplate", "spec", "template", "spec"))
    return mapping(path(props, "spec", "template", "spec"))


def pod_labels(kind: str, props: Mapping[str, Any]) -> Mapping[str, Any]:
    """Labels the workload's pods carry (the template's, or the Pod's own)."""
    if kind == "Pod":
        return mapping(path(props, "metadata", "labels"))
    if kind == "CronJob":
        return mapping(path(props, "spec", "jobTemplate", "spec", "template", "metadata", "labels"))
    return mapping(path(props, "spec", "template", "metadata", "labels"))


def containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Init containers then containers of a pod spec, skipping malformed entries."""
    found = [*sequence(spec.get("initContainers")), *sequence(spec.get("containers"))]
    return [c for c in found if isinstance(c, Mapping)]


def config_value(config: Mapping[str, Any], key: str, default: Any) -> Any:
    """`config[key]`, or `default` when the key is absent or null (no schema defaults apply)."""
    value = config.get(key)
    return default if value is None else value


def config_int(config: Mapping[str, Any], key: str, low: int, high: int) -> int | None:
    """An optional integer key within [low, high]; None when absent.

    Raises ConfigError naming the key when present but not such an integer (`abc`, 5.5, 150).
    """
    value = config.get(key)
    if value is None:
        return None
    number = as_int(value)
    if number is None or not low <= number <= high:
        raise ConfigError(f"{key} = {value!r} is not an integer {low}..{high}")
    return number


def config_ladder(config: Mapping[str, Any]) -> tuple[int, ...]:
    """The `ladder` key as ints (default `DEFAULT_LADDER`).

    Raises ConfigError unless it rises strictly from 0 to 100 in whole percent.
    """
    raw = config_value(config, "ladder", DEFAULT_LADDER)
    steps = tuple(as_int(step) for step in sequence(raw))
    valid = (
        len(steps) >= 2
        and None not in steps
        and list(steps) == sorted(set(steps))
        and steps[0] == 0
        and steps[-1] == 100
    )
    if not valid:
        raise ConfigError(
            f"ladder = {raw!r} must rise strictly from 0 to 100, e.g. [0, 5, 20, 100]"
        )
    return steps  # type: ignore[return-value]


def config_str(config: Mapping[str, Any], key: str, default: str) -> str:
    """A string key (default `default`). Raises ConfigError when present but not a string."""
    value = config_value(config, key, default)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key} = {value!r} is not a non-empty string")
    return value


def subset_name(config: Mapping[str, Any], hardware: str) -> str:
    """The subset name of `hardware` (`nvidia`/`ascend`) from config `<hardware>Subset`."""
    return config_str(config, f"{hardware}Subset", DEFAULT_SUBSETS[hardware])
