"""What the emergency-rollback job hands to `pulumi up --target`: every object whose content
depends on the weight (`dualstack.step.emergency.weight_targets`, the same list `dualstack
rollback` prints): NVIDIA's Deployment first when the rollback needs more NVIDIA pods, the
traffic split, and the PrometheusRule that records the weight.

Targeting NVIDIA's Deployment only when it grows keeps an emergency apply from rolling out
anything else that is merged but not yet deployed.
"""

from __future__ import annotations

from pathlib import Path

from components.settings import PROJECT, load_settings
from dualstack.repo.stackfile import StackFileError, read_config, read_config_at
from dualstack.step.emergency import weight_targets


def rollback_targets(root: Path, stack: str, base: str) -> list[str]:
    """URNs to target after `dualstack rollback` edited `Pulumi.<stack>.yaml` in `root`.

    `base`: the git ref holding the config before the rollback (in CI: HEAD). Returns
    `weight_targets(before, after, stack)`. Raises
    StackFileError when the stack file is missing at `base`, SettingsError when either side
    does not validate.
    """
    before_config = read_config_at(root, stack, base)
    if before_config is None:
        raise StackFileError(f"Pulumi.{stack}.yaml does not exist at {base}")
    return weight_targets(
        load_settings(before_config), load_settings(read_config(root, stack)), stack
    )


def decrease_targets(root: Path, stack: str, deployed_weight: int) -> list[str]:
    """URNs the deploy pipeline applies first when `Pulumi.<stack>.yaml` lowers the weight
    below `deployed_weight` (% from `pulumi stack output ascendWeight`); [] when it does not.

    A full `pulumi up` updates the workloads before the traffic objects that depend on them
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
    return weight_targets(before, after, stack)
