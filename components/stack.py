"""The top component and the program's `main()`: settings in, every resource out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi.runtime.config as pulumi_config

from components import resource_names as names
from components.monitoring.component import UnifiedMonitoring
from components.node_pools import AcceleratorNodePool
from components.precision import PrecisionCheck
from components.settings import HARDWARE, PROJECT, Settings, SettingsError, load_settings
from components.traffic import TrafficSplit
from components.workloads import InferenceWorkload


class DualStackInference(pulumi.ComponentResource):
    """One inference service on NVIDIA and Ascend: both node pools, both workloads and the
    weighted traffic split between them."""

    def __init__(
        self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(names.STACK_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.pools = {
            hw: AcceleratorNodePool(names.pool(name, hw), settings.hardware(hw).pool, child)
            for hw in HARDWARE
        }
        # Workloads wait for their pool's labels and taints, or the pods would stay Pending.
        self.workloads = {
            hw: InferenceWorkload(
                names.child(name, hw),
                settings,
                hw,
                pulumi.ResourceOptions(parent=self, depends_on=[self.pools[hw]]),
            )
            for hw in HARDWARE
        }
        self.traffic = TrafficSplit(
            names.child(name, names.TRAFFIC),
            settings,
            pulumi.ResourceOptions(parent=self, depends_on=list(self.workloads.values())),
        )
        if settings.precision_check.enabled:  # calls both direct Services, so after them
            self.precision = PrecisionCheck(
                names.child(name, names.PRECISION),
                settings,
                pulumi.ResourceOptions(parent=self, depends_on=list(self.workloads.values())),
            )
        if settings.monitoring.enabled:
            self.monitoring = UnifiedMonitoring(
                names.child(name, names.MONITORING), settings, child
            )
        self.register_outputs({})


def stack_config() -> dict[str, Any]:
    """Every config value the Pulumi engine handed this program, `<namespace>:<key>` -> value."""
    return {**pulumi_config.get_config_env(), **pulumi_config.CONFIG.get()}


def exports(settings: Settings, stack: DualStackInference) -> dict[str, Any]:
    """The stack outputs a reviewer and the tooling read (`pulumi stack output ascendWeight`)."""
    return {
        "ascendWeight": settings.ascend_weight,
        "ladderPosition": f"{settings.ladder_position}/{len(settings.ladder) - 1}",
        "nextStep": settings.next_step,
        "ascendImageVerified": settings.ascend_image_verified,
        "namespace": settings.namespace,
        "router": settings.router,
        "virtualService": stack.traffic.virtual_service_name,
        "httpRoute": stack.traffic.http_route_name,
        "routeWeights": stack.traffic.weights,
        "replicas": {hw: stack.workloads[hw].replicas for hw in HARDWARE},
        "deployments": {hw: stack.workloads[hw].deployment_name for hw in HARDWARE},
        "directServices": {hw: stack.workloads[hw].direct_service_name for hw in HARDWARE},
    }


def main(config: Mapping[str, Any] | None = None) -> DualStackInference:
    """Validate the stack config, build every resource and export the reviewer's outputs.

    Raises pulumi.RunError (a clean one-line failure, nothing registered) on a bad config.
    """
    try:
        settings = load_settings(stack_config() if config is None else config, PROJECT)
    except SettingsError as exc:
        raise pulumi.RunError(f"invalid stack config:\n{exc}") from None
    stack = DualStackInference(names.TOP_NAME, settings)
    for key, value in exports(settings, stack).items():
        pulumi.export(key, value)
    return stack
