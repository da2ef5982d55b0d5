"""The CrossGuard policy pack `dualstack-migration`: validators grouped by area.

Importing this package builds the `Policy` objects only; the `PolicyPack` (which starts a gRPC
server and never returns, REFERENCE.md) is built in `policies/__main__.py`, which the Pulumi CLI
runs for `pulumi preview --policy-pack policies`. `dualstack preview` runs the same `POLICIES`
offline through `dualstack.offline.policy_run`.
"""

from policies import (
    capacity,
    disruption,
    envelope,
    fleet,
    placement,
    security,
    supply_chain,
    traffic,
)

PACK_NAME = "dualstack-migration"

POLICIES = (
    *envelope.POLICIES,
    *traffic.POLICIES,
    *capacity.POLICIES,
    *disruption.POLICIES,
    *fleet.POLICIES,
    *placement.POLICIES,
    *supply_chain.POLICIES,
    *security.POLICIES,
)
"""Every policy of the pack, in report order (envelope, traffic, capacity, disruption, fleet,
placement, supply chain, security)."""
