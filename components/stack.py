"""The top component and the program's `main()`: settings in, every resource out.

The offline render walks the same tree without the engine (`dualstack.offline.direct`, checked
against this program run under mocks); a change to which components a stack holds is made in
both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi.runtime.config as pulumi_config

from components import ladder
from components import resource_names as names
from components.monitoring.component import fleet_dashboard_manifest
from components.precision import checker_manifest
from components.resources import (
    AcceleratorNodePool,
    InferenceWorkload,
    PrecisionCheck,
    TrafficSplit,
    UnifiedMonitoring,
    register,
)
from components.settings import (
    HARDWARE,
    PROJECT,
    Fleet,
    Settings,
    SettingsError,
    load_fleet,
)


class ServiceComponents:
    """The components of one service of the fleet, registered under the top component: both
    workloads, the traffic split, the precision check (its Job after `checker`, the stack's
    checker ConfigMap) and the monitoring. Their names start
    with `resource_names.service_prefix(settings.member, name)` (`name` the top component's),
    so the single implicit service keeps
    the names (and URNs) it had before fleets existed."""

    def __init__(
        self,
        parent: pulumi.ComponentResource,
        name: str,
        settings: Settings,
        pools: dict[str, AcceleratorNodePool],
        checker: pulumi.Resource | None = None,
    ) -> None:
        prefix = names.service_prefix(settings.member, name)
        child = pulumi.ResourceOptions(parent=parent)
        self.settings = settings
        # Workloads wait for their pool's labels and taints, or the pods would stay Pending.
        self.workloads = {
            hw: InferenceWorkload(
                names.child(prefix, hw),
                settings,
                hw,
                pulumi.ResourceOptions(parent=parent, depends_on=[pools[hw]]),
            )
            for hw in HARDWARE
        }
        after_workloads = pulumi.ResourceOptions(
            parent=parent, depends_on=list(self.workloads.values())
        )
        self.traffic = TrafficSplit(names.child(prefix, names.TRAFFIC), settings, after_workloads)
        if settings.precision_check.enabled:  # calls both direct Services, so after them
            self.precision = PrecisionCheck(
                names.child(prefix, names.PRECISION), settings, after_workloads, checker
            )
        if settings.monitoring.enabled:
            self.monitoring = UnifiedMonitoring(
                names.child(prefix, names.MONITORING), settings, child
            )


class DualStackInference(pulumi.ComponentResource):
    """The fleet's inference services on NVIDIA and Ascend: both node pools once, the checker
    ConfigMap once (when a service checks precision), and per service both workloads and the
    weighted traffic split between them.

    `fleet`: the stack's services (a single-service stack is a fleet of one, `Fleet.of`)."""

    def __init__(self, name: str, fleet: Fleet, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(names.STACK_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        shared = fleet.first  # the pools are the stack's: equal in every member
        self.pools = {
            hw: AcceleratorNodePool(names.pool(name, hw), shared.hardware(hw).pool, child)
            for hw in HARDWARE
        }
        checker = None
        if any(service.precision_check.enabled for service in fleet):
            # The checker's files once per namespace; each service's Job mounts them.
            checker = register(
                checker_manifest(names.child(name, names.PRECISION_CHECKER), shared.namespace),
                child,
            )
        self.services = {
            service.name: ServiceComponents(self, name, service, self.pools, checker)
            for service in fleet
        }
        monitoring = shared.monitoring
        if fleet.declared and monitoring.enabled and monitoring.dashboard.enabled:
            # One dashboard for the fleet, a `service` variable choosing whose series it shows.
            dashboard = names.child(names.child(name, names.MONITORING), names.DASHBOARD)
            register(fleet_dashboard_manifest(dashboard, shared, fleet.names), child)
        only = next(iter(self.services.values()))
        self.workloads, self.traffic = only.workloads, only.traffic
        self.register_outputs({})


def stack_config() -> dict[str, Any]:
    """Every config value the Pulumi engine handed this program, `<namespace>:<key>` -> value."""
    return {**pulumi_config.get_config_env(), **pulumi_config.CONFIG.get()}


def service_exports(service: ServiceComponents) -> dict[str, Any]:
    """One service's outputs: its weight, ladder position, verification, objects and pods."""
    settings = service.settings
    return {
        "ascendWeight": settings.ascend_weight,
        "ladderPosition": ladder.position_text(settings.ladder, settings.ascend_weight),
        "nextStep": settings.next_step,
        "ascendImageVerified": settings.ascend_image_verified,
        "namespace": settings.namespace,
        "router": settings.router,
        "virtualService": service.traffic.virtual_service_name,
        "httpRoute": service.traffic.http_route_name,
        "routeWeights": service.traffic.weights,
        "replicas": {hw: service.workloads[hw].replicas for hw in HARDWARE},
        "deployments": {hw: service.workloads[hw].deployment_name for hw in HARDWARE},
        "directServices": {hw: service.workloads[hw].direct_service_name for hw in HARDWARE},
    }


def exports(fleet: Fleet, stack: DualStackInference) -> dict[str, Any]:
    """The stack outputs a reviewer and the tooling read (the edge where a single-service
    stack keeps its own shape): the single service's at the top (`pulumi stack output
    ascendWeight`), or a declared fleet's as `services` ({name: the same keys}: `pulumi stack
    output services --json`) beside `namespace`."""
    if not fleet.declared:
        return service_exports(next(iter(stack.services.values())))
    services = {name: service_exports(service) for name, service in stack.services.items()}
    return {
        "namespace": stack.services[next(iter(services))].settings.namespace,
        "services": services,
    }


def main(config: Mapping[str, Any] | None = None) -> DualStackInference:
    """Validate the stack config, build every resource and export the reviewer's outputs.

    Raises pulumi.RunError (a clean one-line failure, nothing registered) on a bad config.
    """
    try:
        fleet = load_fleet(stack_config() if config is None else config, PROJECT)
    except SettingsError as exc:
        raise pulumi.RunError(f"invalid stack config:\n{exc}") from None
    stack = DualStackInference(names.TOP_NAME, fleet)
    for key, value in exports(fleet, stack).items():
        pulumi.export(key, value)
    return stack
