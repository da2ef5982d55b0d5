"""What the emergency-rollback job hands to `pulumi up --target`: the traffic split, and
NVIDIA's Deployment first when the rollback needs more NVIDIA pods (leaving 100 %).

The rule and the URNs are `dualstack.step.emergency`'s (the same `dualstack rollback` prints):
targeting NVIDIA's Deployment only when it grows keeps an emergency apply from rolling out
anything else that is merged but not yet deployed.
"""

from __future__ import annotations

from pathlib import Path

from components.settings import PROJECT, Settings, load_settings
from components.workloads import replicas_for
from dualstack.repo.stackfile import StackFileError, read_config, read_config_at
from dualstack.step.emergency import deployment_urn, virtual_service_urn


def rollback_targets(root: Path, stack: str, base: str) -> list[str]:
    """URNs to target after `dualstack rollback` edited `Pulumi.<stack>.yaml` in `root`.

    `base`: the git ref holding the config before the rollback (in CI: HEAD). Returns
    [NVIDIA Deployment URN (only when NVIDIA replicas grow), VirtualService URN]. Raises
    StackFileError when the stack file is missing at `base`, SettingsError when either side
    does not validate.
    """
    before_config = read_config_at(root, stack, base)
    if before_config is None:
        raise StackFileError(f"Pulumi.{stack}.yaml does not exist at {base}")
    return _targets(load_settings(before_config), load_settings(read_config(root, stack)), stack)


def decrease_targets(root: Path, stack: str, deployed_weight: int) -> list[str]:
    """URNs the deploy pipeline applies first when `Pulumi.<stack>.yaml` lowers the weight
    below `deployed_weight` (% from `pulumi stack output ascendWeight`); [] when it does not.

    A full `pulumi up` updates the workloads before the VirtualService that depends on them
    (`components/stack.py`): right for a raise, but on a decrease Ascend would shrink while
    it still takes the old share. Applying these targets first moves the traffic first. The
    deployed side is the stack file with the deployed weight. Raises StackFileError or
    SettingsError when the stack file (or the weight) does not validate.
    """
    config = read_config(root, stack)
    after = load_settings(config)
    if after.ascend_weight >= deployed_weight:
        return []
    before = load_settings({**config, f"{PROJECT}:ascendWeight": str(deployed_weight)})
    return _targets(before, after, stack)


def _targets(before: Settings, after: Settings, stack: str) -> list[str]:
    targets = [virtual_service_urn(after, stack)]
    if replicas_for(after, "nvidia") > replicas_for(before, "nvidia"):
        targets.insert(0, deployment_urn(stack, "nvidia"))
    return targets
