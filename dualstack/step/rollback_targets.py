"""What the emergency-rollback job hands to `pulumi up --target`: every object whose content
depends on the weight (`dualstack.step.emergency.weight_targets`, the same list `dualstack
rollback` prints): NVIDIA's Deployment first when the rollback needs more NVIDIA pods, the
traffic split, and the PrometheusRule that records the weight.

Targeting NVIDIA's Deployment only when it grows keeps an emergency apply from rolling out
anything else that is merged but not yet deployed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from components.settings import config_with_weights, load_fleet
from dualstack.errors import UsageError
from dualstack.repo.stackfile import StackFileError, read_config, read_config_at
from dualstack.step.emergency import weight_targets


def rollback_targets(root: Path, stack: str, base: str) -> list[str]:
    """URNs to target after `dualstack rollback` edited `Pulumi.<stack>.yaml` in `root`.

    `base`: the git ref holding the config before the rollback (in CI: HEAD). Returns
    `weight_targets(before, after, stack)` over every service of the stack. Raises
    StackFileError when the stack file is missing at `base`, SettingsError when either side
    does not validate.
    """
    before_config = read_config_at(root, stack, base)
    if before_config is None:
        raise StackFileError(f"Pulumi.{stack}.yaml does not exist at {base}")
    return weight_targets(load_fleet(before_config), load_fleet(read_config(root, stack)), stack)


def deployed_weights(
    root: Path, stack: str, weight: int | None = None, services: Mapping[str, int] | None = None
) -> dict[str, int]:
    """The deploy pipeline's deployed weights as {service: weight in %}: the one place its two
    flags become one shape. `weight` is `--deployed-weight N` (`pulumi stack output
    ascendWeight`), a single-service stack's one service's; `services` is `--deployed-services`
    ({service: weight}, from `pulumi stack output services`), a fleet's. Give one of them.

    A stack converted into a fleet of one (or back) and not deployed since exports the other
    shape: one weight for the fleet of one, a map of one service for the single service (the
    rule of `Fleet.laid_out_as`). None of its objects runs under the URN the stack file gives
    it now (the layout names them), so nothing is lowered: {} (the full `up` replaces the
    layout in one run, the new objects at the merged weight).

    Raises UsageError for one weight given for a fleet of several (or a map of several for a
    single-service stack), StackFileError or SettingsError when the stack file does not
    validate.
    """
    fleet = load_fleet(read_config(root, stack))
    one = services is None or len(services) == 1
    if fleet.declared != (services is not None) and len(fleet) == 1 and one:
        return {}
    if fleet.declared != (services is not None):
        given = "a map of service weights" if services is not None else "one weight"
        wanted = "--deployed-services" if fleet.declared else "--deployed-weight"
        raise UsageError(
            f"stack {stack} holds {'a fleet' if fleet.declared else 'one service'}, but "
            f"{given} was given: pass {wanted}"
        )
    if services is not None:
        return dict(services)
    if weight is None:
        raise TypeError("deployed_weights: give weight or services")
    return {fleet.first.name: weight}


def decrease_targets(root: Path, stack: str, deployed: Mapping[str, int]) -> list[str]:
    """URNs the deploy pipeline applies first when `Pulumi.<stack>.yaml` lowers a weight
    below the deployed one; [] when it lowers none. `deployed` is {service: deployed weight
    in %} (`deployed_weights`); a service missing from it was never deployed and is not
    lowered.

    A full `pulumi up` updates the workloads before the traffic objects that depend on them
    (`components/stack.py`): right for a raise, but on a decrease Ascend would shrink while
    it still takes the old share. Applying these targets first moves the traffic first. The
    deployed side is the stack file with the deployed weights of the lowered services. Raises
    StackFileError or SettingsError when the stack file (or a weight) does not validate.
    """
    config = read_config(root, stack)
    after = load_fleet(config)
    lowered = {
        name: deployed[name]
        for name, settings in after.members.items()
        if name in deployed and settings.ascend_weight < deployed[name]
    }
    if not lowered:
        return []
    before = load_fleet(config_with_weights(config, lowered))
    return weight_targets(before, after, stack)
