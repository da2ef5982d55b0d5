"""The offline render: the Kubernetes objects of a stack, without a cluster, the Pulumi CLI or
the engine.

`render_fleet` walks the program's pure builders (`dualstack.offline.direct`); `run_program`
runs the program itself under `pulumi.runtime.set_mocks`, whose recorded inputs are the
objects `pulumi up` would send: the oracle the direct walk is checked against, registration
for registration (tests/dualstack/offline/test_direct_render.py). Either way objects come out
sorted by (kind, namespace, name), whole-number floats as ints, and NodePatches as `kind:
Node` objects carrying only the name, labels and taints they set.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

import yaml

from components.settings import PROJECT, Fleet, Settings, SettingsError, load_fleet
from dualstack.offline.direct import Registered, registrations

KUBERNETES_PREFIX = "kubernetes:"
TOP_LEVEL_ORDER = ("apiVersion", "kind", "metadata")


class RenderError(RuntimeError):
    """The program registered something the real provider would refuse (no name, duplicates),
    or refused the config as the engine hands it over."""


def config_strings(config: Mapping[str, Any]) -> dict[str, str]:
    """Stack-file values as the Pulumi engine hands them over: strings, JSON for structures."""
    return {
        key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()
    }


def run_program(config: Mapping[str, Any], stack: str) -> list[Registered]:
    """Run `components.stack.main()` under mocks with `config`; the resources it registered
    (the oracle of `dualstack.offline.direct.registrations`, and the tests' program run).

    Raises RenderError when the program refuses the config as the engine hands it over
    (strings, JSON text), or whatever else the program raises.
    """
    # Imported here, not at the top: pulumi and pulumi_kubernetes take most of a second to
    # import, and the offline commands render without them.
    import pulumi

    from components.stack import main
    from dualstack.offline.mocks import ParentNotingMonitor, RecordingMocks

    mocks = RecordingMocks()
    monitor = ParentNotingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=True, monitor=monitor)
    pulumi.runtime.set_all_config(config_strings(config))
    try:
        pulumi.runtime.test(main)()
    except pulumi.RunError as exc:
        # The program validates the config as the engine hands it over (strings and JSON);
        # the CLI validated the file's values first, so this is a value the two read apart.
        raise RenderError(str(exc).replace("invalid stack config:\n", "", 1)) from None
    return mocks.resources


def whole_numbers(value: Any) -> Any:
    """Recursively turn floats with no fractional part into ints (mocks send 4.0 for 4)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def canonical(value: Any, first: tuple[str, ...] = ("name", "record", "alert")) -> Any:
    """Keys in a stable order at every depth: `first` keys, then the rest alphabetically.

    `record` / `alert` lead so a Prometheus rule reads (and diffs) under its name.

    Mocked registration hands inputs over in no fixed key order; a stable order makes the
    render byte-for-byte repeatable and its diffs minimal.
    """
    if isinstance(value, dict):
        keys = [k for k in first if k in value] + sorted(k for k in value if k not in first)
        return {k: canonical(value[k]) for k in keys}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def to_object(resource: Registered) -> dict[str, Any]:
    """The Kubernetes object a recorded resource stands for.

    Raises RenderError when it has no `metadata.name` (mocks accept that; the API does not).
    """
    inputs = whole_numbers(resource.inputs)
    metadata = inputs.get("metadata") or {}
    if not metadata.get("name"):
        raise RenderError(f"{resource.type_} {resource.name!r} has no metadata.name")
    if resource.type_.endswith("Patch") and inputs.get("kind") == "Node":
        node = {"name": metadata["name"], "labels": metadata.get("labels", {})}
        taints = (inputs.get("spec") or {}).get("taints", [])
        inputs = {"apiVersion": "v1", "kind": "Node", "metadata": node, "spec": {"taints": taints}}
    return canonical(inputs, first=TOP_LEVEL_ORDER)


def sort_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    """(kind, namespace, name): the render order."""
    meta = obj.get("metadata", {})
    return (obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))


def objects_of(resources: list[Registered]) -> list[dict[str, Any]]:
    """Sorted Kubernetes objects of the recorded custom resources.

    Raises RenderError when two objects share kind, namespace and name.
    """
    objects = [
        to_object(r) for r in resources if r.custom and r.type_.startswith(KUBERNETES_PREFIX)
    ]
    objects.sort(key=sort_key)
    for first, second in itertools.pairwise(objects):
        if sort_key(first) == sort_key(second):
            raise RenderError("two objects are both {} {}/{}".format(*sort_key(first)))
    return objects


def program_fleet(config: Mapping[str, Any]) -> Fleet:
    """The fleet the program builds: `config` as the engine hands it over (strings, JSON text,
    `config_strings`), validated as `components.stack.main` validates it.

    Raises RenderError when the program would refuse it (the CLI validated the file's values
    first, so this is a value the two read apart).
    """
    try:
        return load_fleet(config_strings(config), PROJECT)
    except SettingsError as exc:
        raise RenderError(str(exc)) from None


def program_objects(config: Mapping[str, Any], stack: str) -> list[dict[str, Any]]:
    """The sorted objects of `program_fleet(config)` on `stack`, built without the engine.

    Raises RenderError.
    """
    return objects_of(registrations(program_fleet(config), stack))


def render_fleet(config: Mapping[str, Any], stack: str) -> tuple[Fleet, list[dict[str, Any]]]:
    """Validate `config` and return (the fleet, sorted objects of every service), built by
    the program's pure builders without the engine (`dualstack.offline.direct`).

    Raises SettingsError (before anything is built) or RenderError.
    """
    fleet = load_fleet(config, PROJECT)
    return fleet, program_objects(config, stack)


def render(
    config: Mapping[str, Any], stack: str, service: str | None = None
) -> tuple[Settings, list[dict[str, Any]]]:
    """`render_fleet`, with the settings of one service (`service`, or the only one): the
    objects are still every service's.

    Raises SettingsError (also for a fleet of several without `service`) or RenderError.
    """
    settings = load_fleet(config, PROJECT).member(service)
    return settings, program_objects(config, stack)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # libyaml when PyYAML has it
    """Block-style YAML; multi-line strings (scripts, rule expressions) as literal blocks."""

    def ignore_aliases(self, data: Any) -> bool:
        # No anchors: every rendered container is its own (`canonical` copies them), and
        # skipping the representer's alias bookkeeping saves a tenth of the dump.
        return True


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """Multi-document YAML, one document per object, keys in render order."""
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def file_name(obj: Mapping[str, Any]) -> str:
    """File name for `render --output DIR`: `<kind>-<namespace>-<name>.yaml`, lowercase."""
    kind, namespace, name = sort_key(obj)
    parts = [kind.lower(), namespace, name] if namespace else [kind.lower(), name]
    return "-".join(parts) + ".yaml"
