"""The program's resources without the engine: the tree `components.stack.main()` registers,
walked over the same pure builders, as cdk8s synthesises (walk the constructs, dump each).

`registrations(fleet, stack)` lists what the Pulumi program registers for `fleet` on `stack`:
every ComponentResource (type token, logical name, parent) and every Kubernetes object, its
inputs the builders' manifests (`components.manifests`: apiVersion, kind, camelCase fields),
which are what the provider receives. Nothing here imports Pulumi; the program run under
mocks (`dualstack.offline.render.run_program`) is the oracle, and
tests/dualstack/offline/test_direct_render.py holds the two equal, registration for
registration and byte for byte, over every stack and variant. What the program's classes add
beyond the manifests (`depends_on`, aliases, outputs) changes what `pulumi up` orders, never an
object, and stays in `components.resources`.

The component tree mirrors `components.stack` (`DualStackInference`, `ServiceComponents`):
a component added there is added here, or the identity test fails.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from components import resource_names as names
from components.manifests import Manifest
from components.monitoring.component import fleet_dashboard_manifest, monitoring_manifests
from components.node_pools import node_patch_manifests
from components.precision import checker_manifest, precision_manifests
from components.settings import HARDWARE, Fleet, Settings
from components.traffic import traffic_manifests
from components.workloads import workload_manifests


@dataclass(frozen=True)
class Registered:
    """One resource the program registers: Pulumi type token, logical name, inputs, whether
    it is a custom resource (False for a ComponentResource), and its parent's logical name
    (None under the stack)."""

    type_: str
    name: str
    inputs: dict[str, Any]
    custom: bool
    parent: str | None = None


def _component(type_: str, name: str, parent: str | None) -> Registered:
    return Registered(type_, name, {}, False, parent)


def _objects(manifests: Iterable[Manifest], parent: str) -> list[Registered]:
    return [Registered(m.type_, m.name, m.body, True, parent) for m in manifests]


def service_registrations(
    settings: Settings, stack: str, top: str = names.TOP_NAME
) -> list[Registered]:
    """One service's components under the top component `top`, each followed by its
    objects: both workloads, the traffic split, the precision check (when enabled) and the
    monitoring (when enabled), named from `resource_names.service_prefix`."""
    prefix = names.service_prefix(settings.member, top)
    found: list[Registered] = []
    for hw in HARDWARE:
        name = names.child(prefix, hw)
        found.append(_component(names.WORKLOAD_TYPE, name, top))
        found += _objects(workload_manifests(name, settings, hw).values(), name)
    name = names.child(prefix, names.TRAFFIC)
    found.append(_component(names.TRAFFIC_TYPE, name, top))
    found += _objects(traffic_manifests(name, settings).values(), name)
    if settings.precision_check.enabled:
        name = names.child(prefix, names.PRECISION)
        found.append(_component(names.PRECISION_TYPE, name, top))
        found += _objects(precision_manifests(name, settings).values(), name)
    if settings.monitoring.enabled:
        name = names.child(prefix, names.MONITORING)
        found.append(_component(names.MONITORING_TYPE, name, top))
        found += _objects(monitoring_manifests(name, settings, stack).values(), name)
    return found


def registrations(fleet: Fleet, stack: str, top: str = names.TOP_NAME) -> list[Registered]:
    """Every resource `components.stack.main()` registers for `fleet` on stack `stack`, in
    its registration order: the top component, both node pools and their NodePatches, the
    checker ConfigMap (when a service checks precision), each service's components
    (`service_registrations`), and a declared fleet's one dashboard."""
    shared = fleet.first  # the pools and the fleet dashboard are the stack's
    found = [_component(names.STACK_TYPE, top, None)]
    for hw in HARDWARE:
        pool = names.pool(top, hw)
        found.append(_component(names.NODE_POOL_TYPE, pool, top))
        found += _objects(node_patch_manifests(pool, shared.hardware(hw).pool), pool)
    if any(service.precision_check.enabled for service in fleet):
        checker = names.child(top, names.PRECISION_CHECKER)
        found += _objects([checker_manifest(checker, shared.namespace)], top)
    for service in fleet:
        found += service_registrations(service, stack, top)
    monitoring = shared.monitoring
    if fleet.declared and monitoring.enabled and monitoring.dashboard.enabled:
        dashboard = names.child(names.child(top, names.MONITORING), names.DASHBOARD)
        found += _objects([fleet_dashboard_manifest(dashboard, shared, fleet.names)], top)
    return found
