"""What to run after a rollback, fastest first: a targeted `pulumi up`, then break-glass.

Resource URNs follow Pulumi's scheme `urn:pulumi:<stack>::<project>::<parent types joined by
$>$<type>::<name>` (pulumi.com/docs/concepts/resources/names/#urns). Type tokens and logical
names come from `components/resource_names.py`, the definition the components register
under; tests check the URNs against a render.

A `kubectl patch` of the VirtualService (or, with `router: gateway-api`, the HTTPRoute) acts
at once but is overwritten by the next GitOps apply unless the same change lands in git
(REFERENCE.md: the seed article's error): before each update pulumi-kubernetes hands its own
field manager the fields of every `kubectl*` manager, `kubectl-patch` included (await.go
`fixCSAFieldManagers`, prefix match; pulumi-kubernetes#2640), so that apply meets no conflict
(docs/operations.md, "Break-glass").
"""

from __future__ import annotations

import shlex
from types import ModuleType

from components import resource_names as names
from components.routers import active
from components.settings import PROJECT, Fleet, Hardware, Settings
from components.traffic import route_weights
from components.workloads import replicas_for


def urn(stack: str, types: tuple[str, ...], name: str) -> str:
    """`urn:pulumi:<stack>::<project>::<type$type$...>::<name>`."""
    return f"urn:pulumi:{stack}::{PROJECT}::{'$'.join(types)}::{name}"


def route_urn(router: ModuleType, settings: Settings, stack: str) -> str:
    """URN of the object of `router` (`components.routers`) that splits the service's traffic
    (`inference-traffic-virtual-service`, `inference-chat-traffic-http-route` for the fleet
    member `chat`)."""
    types = (names.STACK_TYPE, names.TRAFFIC_TYPE, router.type_token(settings))
    traffic = names.child(names.service_prefix(settings.member), names.TRAFFIC)
    return urn(stack, types, names.child(traffic, router.ROLE))


def traffic_urns(settings: Settings, stack: str) -> list[str]:
    """URNs of the objects that route the service's traffic: the HTTPRoute (gateway-api), the
    VirtualService (istio, or classic gateways kept during a cut-over)."""
    return [route_urn(router, settings, stack) for router in active(settings)]


def deployment_urn(stack: str, hardware: Hardware, member: str | None = None) -> str:
    """URN of one backend's Deployment (of the fleet member `member`)."""
    types = (names.STACK_TYPE, names.WORKLOAD_TYPE, "kubernetes:apps/v1:Deployment")
    workload = names.child(names.service_prefix(member), hardware)
    return urn(stack, types, names.child(workload, names.DEPLOYMENT))


def prometheus_rule_urn(stack: str, member: str | None = None) -> str:
    """URN of the monitoring PrometheusRule (it records the configured weight)."""
    kind = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
    types = (names.STACK_TYPE, names.MONITORING_TYPE, kind)
    monitoring = names.child(names.service_prefix(member), names.MONITORING)
    return urn(stack, types, names.child(monitoring, names.RULES))


def moved_services(before: Fleet, after: Fleet) -> list[str]:
    """The services whose weight differs between `before` and `after` (a service new in
    `after` counts as moved); every service when none moved (a rollback that re-applies the
    split as it is)."""
    old, new = before.members, after.members
    moved = [
        name
        for name, settings in new.items()
        if name not in old or old[name].ascend_weight != settings.ascend_weight
    ]
    return moved or list(new)


def weight_targets(before: Fleet, after: Fleet, stack: str) -> list[str]:
    """Every object whose content depends on the weight, in apply order: the one definition
    the emergency rollback (`dualstack rollback`, `dualstack ci rollback-targets` and the
    pipelines) targets. `before` / `after` are the stack's fleet (a single-service stack's:
    a fleet of one).

    For each service whose weight moves (`moved_services`; every one when none does):
    [NVIDIA's Deployment, only when the change needs more NVIDIA pods (capacity first: Pulumi
    waits for the rollout)], then each such service's traffic objects (`traffic_urns`: the
    HTTPRoute and/or the VirtualService), then its PrometheusRule when monitoring is on (it
    records the configured weight; a stale one fires AscendNoTraffic). A fleet member whose
    weight stays is not targeted: a targeted `up` of it would roll out whatever of it is
    merged but not deployed.
    """
    old, new = before.members, after.members
    services = [new[name] for name in moved_services(before, after)]
    grow = [
        deployment_urn(stack, "nvidia", s.member)
        for s in services
        if _nvidia_grows(old.get(s.name, s), s)
    ]
    traffic = [target for s in services for target in traffic_urns(s, stack)]
    rules = [prometheus_rule_urn(stack, s.member) for s in services if s.monitoring.enabled]
    return [*grow, *traffic, *rules]


def targeted_up(before: Fleet, after: Fleet, stack: str) -> str:
    """`pulumi up --stack S --target ...` over `weight_targets(before, after, stack)`."""
    flags = " ".join(f"--target {shlex.quote(t)}" for t in weight_targets(before, after, stack))
    return f"pulumi up --stack {shlex.quote(stack)} {flags}"


def break_glass_patches(settings: Settings) -> list[str]:
    """`kubectl -n NS patch <route kind> NAME --type json -p '<patch>'`, one per traffic
    object (the HTTPRoute, then the VirtualService), setting its split to the service's
    weight (`patch` of each router in `components.routers`)."""
    weights = route_weights(settings.ascend_weight)
    return [router.kubectl_patch(settings, weights) for router in active(settings)]


def scale_command(settings: Settings, hardware: Hardware) -> str:
    """`kubectl -n NS scale deployment NAME --replicas=N` to the pods `settings` needs."""
    name = settings.hardware(hardware).deployment_name
    replicas = replicas_for(settings, hardware)
    return f"kubectl -n {settings.namespace} scale deployment {name} --replicas={replicas}"


def instructions(before: Fleet, after: Fleet, stack: str) -> list[str]:
    """The rollback SOP as lines: targeted apply, landing the change, break-glass caveat (one
    `kubectl patch` per moved service of a fleet, after scaling up each NVIDIA that grows)."""
    old, new = before.members, after.members
    moved = [new[name] for name in moved_services(before, after)]
    grows = [s for s in moved if _nvidia_grows(old.get(s.name, s), s)]
    lines = [
        "Fastest safe path (applies only the traffic split"
        + (", after scaling NVIDIA back up" if grows else "")
        + "):",
        f"  {targeted_up(before, after, stack)}",
        "Then land this change in git (commit, PR, merge) and let the next full `pulumi up` "
        "resize the rest.",
        "Break-glass without Pulumi (acts at once, but the next `pulumi up` takes the fields "
        "back from kubectl-patch and overwrites it with the weight of the commit it deploys, "
        "so land this commit first):",
    ]
    for settings in grows:
        name = settings.nvidia.deployment_name
        lines.append(f"  {scale_command(settings, 'nvidia')}   # first: capacity for the traffic")
        lines.append(f"  kubectl -n {settings.namespace} rollout status deployment {name}")
    lines += [f"  {patch}" for settings in moved for patch in break_glass_patches(settings)]
    return lines


def break_glass_lines(before: Fleet, after: Fleet, stack: str) -> list[str]:
    """The break-glass `kubectl patch` lines of `instructions` (one per traffic object of each
    moved service)."""
    new = after.members
    moved = [new[name] for name in moved_services(before, after)]
    return [f"  {patch}" for settings in moved for patch in break_glass_patches(settings)]


def _nvidia_grows(before: Settings, after: Settings) -> bool:
    """True when `after` needs more NVIDIA pods than `before` (capacity first)."""
    return replicas_for(after, "nvidia") > replicas_for(before, "nvidia")
