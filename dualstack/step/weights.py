"""Moving a service's `ascendWeight` the way an operator would: one ladder step up, or down.

The write goes through `pulumi config set ascendWeight N --stack S` when the Pulumi CLI is on
PATH (it stores the string "N" under `dualstack-inference:ascendWeight`, REFERENCE.md), for a
fleet member `pulumi config set --path services.<name>.ascendWeight N` (an integer), and
otherwise edits `Pulumi.<stack>.yaml` in place with `dualstack.repo.stackfile.set_config_values`,
which keeps every comment and every other line. Either way the file is read back and
validated, so a write that did not take is an error, not a silent no-op.

Leaving the shadow rung (weight 0 with `mirrorPercent` > 0) for a weight above 0 also writes
`mirrorPercent` 0: mirroring is allowed only at weight 0, so the step is two lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from components import ladder
from components.settings import Fleet, Settings, SettingsError, load_fleet
from components.workloads import replicas_for
from dualstack.errors import UsageError
from dualstack.pulumi_cli import config_set
from dualstack.repo.atomic import put_back
from dualstack.repo.stackfile import StackFileError, read_config, set_config_values, stack_path

WEIGHT_KEY = "ascendWeight"
MIRROR_KEY = "mirrorPercent"


@dataclass(frozen=True)
class WeightChange:
    """A weight move that was written: the service's settings before and after, and how."""

    stack: str
    before: Settings
    after: Settings
    method: str

    @property
    def service(self) -> str | None:
        """The fleet member moved (`services.<name>`), None for a single-service stack."""
        return self.after.member

    @property
    def where(self) -> str:
        """How titles and messages name it: `prod`, or `fleet/chat` for a fleet member."""
        return self.stack if self.service is None else f"{self.stack}/{self.service}"

    @property
    def replicas(self) -> dict[str, tuple[int, int]]:
        """{hardware: (pods before, pods after)}."""
        return {
            hw: (replicas_for(self.before, hw), replicas_for(self.after, hw))
            for hw in ("nvidia", "ascend")
        }


def ladder_text(settings: Settings, weight: int | None = None) -> str:
    """The ladder with one step bracketed: `0 [5] 20 50 80 100`."""
    return ladder.marked(settings.ladder, settings.ascend_weight if weight is None else weight)


def rollback_target(settings: Settings, to: int) -> int:
    """Check a rollback target: a ladder step at or below the current weight.

    Raises UsageError naming `--to` when it is not a step, or above the current weight
    (raising the weight is `promote`'s job and goes through the gate).
    """
    if problem := ladder.rollback_problem(settings.ladder, settings.ascend_weight, to):
        raise UsageError(f"--to {to}: {problem}")
    return to


def restore_stack_file(root: Path, stack: str, original: bytes) -> None:
    """Put back the stack file's bytes as they were before a write (atomically; nothing is
    written when it holds them still: a failed write leaves them, `dualstack.repo.atomic`)."""
    put_back(stack_path(root, stack), original)


def write_weight(root: Path, stack: str, weight: int, key: str = WEIGHT_KEY) -> str:
    """Store `weight` under config `key` (`ascendWeight`, or a member's
    `services.<name>.ascendWeight`); returns how, for the user.

    Prefers `pulumi config set` (`--path` for a member); falls back to editing the stack file
    (from its original bytes, whatever a failed CLI left) when the CLI is missing or fails.
    Raises StackFileError when the file cannot be edited.
    """
    path = stack_path(root, stack)
    original = path.read_bytes()
    problem = config_set(root, stack, key, str(weight))
    if problem is None:
        flag = " --path" if "." in key else ""
        return f"pulumi config set{flag} {key} {weight} --stack {stack}"
    put_back(path, original)
    set_config_values(root, stack, {key: weight})
    return f"edited {path.name} in place; {problem}"


def _read_back(root: Path, stack: str, original: bytes, method: str) -> Fleet:
    """The stack's fleet after a write; on a config that no longer validates the file's
    `original` bytes are put back and StackFileError is raised."""
    try:
        return load_fleet(read_config(root, stack))
    except (SettingsError, StackFileError) as exc:
        restore_stack_file(root, stack, original)
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise StackFileError(
            f"{stack_path(root, stack).name} after `{method.split(';')[0]}` does not validate: "
            f"{first}; restored its previous content"
        ) from None


def change_weight(root: Path, stack: str, before: Settings, weight: int) -> WeightChange:
    """Write `weight` as `before`'s service's weight (`Settings.weight_key`) and read the
    stack back; the validated change.

    When the file does not hold a valid stack with that service at `weight` afterwards, its
    original bytes are put back and StackFileError is raised naming what was wrong.
    """
    path = stack_path(root, stack)
    original = path.read_bytes()
    try:
        if weight > 0 and before.mirror_percent > 0:  # the shadow rung ends with this step
            write_weight(root, stack, 0, before.config_key(MIRROR_KEY))
        method = write_weight(root, stack, weight, before.weight_key)
    except BaseException:
        restore_stack_file(root, stack, original)
        raise
    after = _read_back(root, stack, original, method).members.get(before.name)
    if after is None or after.ascend_weight != weight:
        restore_stack_file(root, stack, original)
        held = "no such service" if after is None else after.ascend_weight
        raise StackFileError(
            f"{path.name} holds {before.weight_key} {held} after writing {weight}; "
            "restored its previous content"
        )
    return WeightChange(stack, before, after, method)


def change_fleet_weights(
    root: Path, stack: str, before: Fleet, weights: dict[str, int]
) -> list[WeightChange]:
    """Write {service: weight} of the fleet `before` in one edit of the stack file (no
    `pulumi config set`: one change, however many services), read it back and check it; the
    validated changes, in fleet order. On any mismatch the file is put back and
    StackFileError raised."""
    path = stack_path(root, stack)
    original = path.read_bytes()
    keys = {before.members[name].weight_key: weight for name, weight in weights.items()}
    set_config_values(root, stack, keys)
    method = f"edited {path.name} in place, {len(keys)} service weights in one change"
    after = _read_back(root, stack, original, method)
    changes = []
    for name, weight in weights.items():
        now = after.members.get(name)
        if now is None or now.ascend_weight != weight:
            restore_stack_file(root, stack, original)
            raise StackFileError(
                f"{path.name} does not hold {before.members[name].weight_key} {weight} after "
                "writing it; restored its previous content"
            )
        changes.append(WeightChange(stack, before.members[name], now, method))
    return changes
