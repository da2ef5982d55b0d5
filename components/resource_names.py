"""Pulumi type tokens and logical names of the program's resources: one definition.

URNs, and so `pulumi up --target`, depend on these (pulumi.com/docs/concepts/resources/names/
#urns: `urn:pulumi:<stack>::<project>::<parent types joined by $>$<type>::<name>`). The
components register their children under these names, and the emergency rollback derives its
targets from them (`dualstack.step.emergency`), so neither restates the other. Changing any
value here replaces resources in every stack.
"""

from __future__ import annotations

TOP_NAME = "inference"
"""Logical name of the top component; every child's name starts with it."""

STACK_TYPE = "dualstack:index:DualStackInference"
NODE_POOL_TYPE = "dualstack:index:AcceleratorNodePool"
WORKLOAD_TYPE = "dualstack:index:InferenceWorkload"
TRAFFIC_TYPE = "dualstack:index:TrafficSplit"
MONITORING_TYPE = "dualstack:index:UnifiedMonitoring"
PRECISION_TYPE = "dualstack:index:PrecisionCheck"
HTTP_ROUTE_TOKEN = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
"""Type token of the HTTPRoute (an apiextensions CustomResource, like the VirtualService)."""

# Roles: the suffix a child's logical name gets under its parent (`<parent>-<role>`).
TRAFFIC = "traffic"
MONITORING = "monitoring"
PRECISION = "precision"
PRECISION_CHECKER = "precision-checker"
"""The stack's one checker ConfigMap (`inference-precision-checker`), shared by its services."""
VIRTUAL_SERVICE = "virtual-service"
HTTP_ROUTE = "http-route"
DESTINATION_RULE = "destination-rule"
SERVICE = "service"
DEPLOYMENT = "deployment"
PDB = "pdb"
SERVICE_ACCOUNT = "service-account"
NETWORK_POLICY = "network-policy"
RULES = "rules"
DASHBOARD = "dashboard"


def kubernetes_type(api_version: str, kind: str) -> str:
    """The type token the Kubernetes provider registers an object under:
    `kubernetes:<group>/<version>:<Kind>`, the core group spelt `core` (`v1` Service ->
    `kubernetes:core/v1:Service`; `apps/v1` Deployment -> `kubernetes:apps/v1:Deployment`; a
    CustomResource keeps its apiVersion, `kubernetes:networking.istio.io/v1:VirtualService`).
    A server-side apply patch takes its kind with `Patch` (`NodePatch`)."""
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{group_version}:{kind}"


def child(parent: str, role: str) -> str:
    """The logical name of `parent`'s child in `role`: child("inference", "traffic") ->
    `inference-traffic`."""
    return f"{parent}-{role}"


def service_prefix(member: str | None, top: str = TOP_NAME) -> str:
    """The name every component of one service starts with: the top component's name for the
    single implicit service (`inference`, unchanged since one stack held one service), else
    `<top>-<member>` (`inference-chat`) for a fleet member (`services.chat`)."""
    return top if member is None else child(top, member)


def pool(parent: str, hardware: str) -> str:
    """The node-pool component of one hardware: `inference-nvidia-pool`."""
    return child(parent, f"{hardware}-pool")
