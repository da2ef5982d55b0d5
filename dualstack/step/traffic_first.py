"""The emergency rollback, traffic first (docs/operations.md): stop the running update,
apply the traffic objects alone, then record the same change in git.

Per stack, in this order (`apply_fleet` runs the stacks of `--all` side by side):

1. Stop: `pulumi cancel --yes --stack S`, so the rollback never waits behind a deploy. On
   Pulumi Cloud the cancelled CLI's next checkpoint write is refused ("failed to save
   snapshot", pulumi/pulumi#2461), so it starts no further step; an operation it had already
   sent to the API server completes there. With no update running, the CLI answers
   `[409] Conflict: The Update has already completed` (pulumi/pulumi#5364) or `stack S has
   never been updated` (pkg/backend/httpstate `CancelCurrentUpdate`): nothing to stop. At the
   same time `pulumi stack output ascendWeight` reads the deployed weight.
2. Traffic: `pulumi up --yes --skip-preview --refresh=false --stack S --target <URN> ...
   --target-dependents` over `weight_targets(cluster, after, S)`
   (`dualstack.step.emergency`, the one definition: NVIDIA's Deployment first when NVIDIA must
   grow, the traffic objects, the PrometheusRule that records the weight). `cluster` is the
   stack at the higher of git's and the deployed weight (a deploy in progress may already
   have shrunk NVIDIA although its output still says the old weight; unknown counts as the
   ladder's top). The provider applies the objects under the field manager its state records
   (pulumi-kubernetes `fieldManagerName`: annotation, then the state's `__fieldManager`, then
   a new `pulumi-kubernetes-<random>`), so the next `pulumi up` meets no conflict, and the
   state holds the applied objects, so it needs no refresh.
3. Git: one commit of the rolled-back stack files on a new branch from the default branch's
   tip (`commit_rollback`); the pipelines push it and open the pull request.

Every Pulumi call goes through `dualstack.pulumi_cli.run_pulumi`, the one CLI owner.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from components import ladder
from components.settings import PROJECT, Fleet, Settings, config_with_weights, load_fleet
from dualstack.errors import UsageError
from dualstack.pulumi_cli import (
    PulumiCliError,
    StackOutputError,
    read_fleet_weights,
    run_pulumi,
)
from dualstack.repo.atomic import put_back
from dualstack.repo.changes import deploy_order
from dualstack.repo.git import GitError, git
from dualstack.repo.stackfile import (
    StackFileError,
    read_config,
    read_config_at,
    set_config_values,
    stack_path,
    stacks,
)
from dualstack.step.emergency import weight_targets
from dualstack.step.publish import choose_branch, default_branch, local_branch
from dualstack.step.weights import WEIGHT_KEY

UP_TIMEOUT_S = 900.0
"""Seconds the targeted `pulumi up` may take. Above Pulumi's own 10-minute Deployment await,
so when NVIDIA must grow the CLI reports a stuck rollout itself, and is never killed holding
the stack's lock."""

CANCEL_TIMEOUT_S = 30.0
"""Seconds `pulumi cancel` and the deployed-weight read may take (one backend round-trip)."""

NOTHING_RUNNING = ("already completed", "never been updated")
"""What `pulumi cancel` says when no update is running (see the module docstring)."""

PROGRAM_FILES = ("__main__.py", "Pulumi.yaml", "components")
"""What the targeted `up` runs besides the stack file: it must be the default branch's."""


def fleet(root: Path) -> list[str]:
    """Every stack with a `Pulumi.<stack>.yaml` in `root`, in deploy order: what `--all` rolls
    back (every service of each: `weight_targets` names the traffic objects of each)."""
    found = deploy_order(stacks(root))
    if not found:
        raise StackFileError(f"no Pulumi.<stack>.yaml in {root}: nothing to roll back")
    return found


@dataclass(frozen=True)
class StackRollback:
    """One stack's rollback: HEAD's stack config, its fleet before and after, and the services
    rolled back (every one of a single-service stack: its only one)."""

    stack: str
    config: dict
    fleet_before: Fleet
    fleet_after: Fleet
    services: tuple[str, ...]

    @property
    def before(self) -> Settings:
        """The first rolled-back service's settings before (the only one's, single stack)."""
        return self.fleet_before.members[self.services[0]]

    @property
    def after(self) -> Settings:
        """The first rolled-back service's settings after."""
        return self.fleet_after.members[self.services[0]]

    def moves(self) -> list[tuple[Settings, Settings]]:
        """(before, after) of each rolled-back service."""
        return [(self.fleet_before.members[n], self.fleet_after.members[n]) for n in self.services]

    def moved(self) -> list[tuple[Settings, Settings]]:
        """(before, after) of each rolled-back service whose weight changes in git."""
        return [(old, new) for old, new in self.moves() if old.ascend_weight != new.ascend_weight]

    @property
    def changes_git(self) -> bool:
        """True when the stack file's weight changes (else git already holds it)."""
        return bool(self.moved())


def plan_rollback(
    root: Path, stack: str, to: int, clamp: bool, service: str | None = None
) -> StackRollback:
    """The rollback of `stack` to ladder step `to`, from HEAD's stack file: of `service`, of
    the only service, or with `clamp` (`--all`) of every service.

    `clamp` (`--all`): a service already at or below `to` keeps its weight (it is re-applied).
    Otherwise `to` above the service's weight is a UsageError naming `--to`; `to` that is not
    a ladder step is one in either case. Raises StackFileError / SettingsError when the stack
    file is missing or does not validate, or (without `clamp`) `service` is unknown or missing
    while the stack holds several.
    """
    config = read_config_at(root, stack, "HEAD")
    if config is None:
        raise StackFileError(f"Pulumi.{stack}.yaml is not committed: nothing to roll back to")
    before = load_fleet(config)
    names = before.names if clamp and service is None else [before.member(service).name]
    where = f" of stack {stack}"
    if problem := ladder.step_problem(before.first.ladder, to, where):
        raise UsageError(f"--to {to}: {problem}")
    for name in names if not clamp else ():
        settings = before.members[name]
        whose = f"stack {stack}'s weight" if settings.member is None else f"service {name}'s weight"
        if problem := ladder.rollback_problem(settings.ladder, settings.ascend_weight, to, whose):
            raise UsageError(f"--to {to}: {problem}")
    weights = {name: min(to, before.members[name].ascend_weight) for name in names}
    after = load_fleet(config_with_weights(config, weights))
    return StackRollback(stack, config, before, after, tuple(names))


def check_checkout(root: Path, stacks: list[str]) -> str:
    """Before anything changes: `root` is a git checkout of the default branch's tip whose
    program and stack files have no uncommitted change but `ascendWeight` (the targeted `up`
    runs the default branch's program from this tree). Returns that branch's ref.

    Raises GitError naming what to do (`git switch`, `git stash`); changes nothing.
    """
    git(root, "rev-parse", "--is-inside-work-tree")
    base, sha = default_branch(root)
    head = git(root, "rev-parse", "HEAD").strip()
    if head != sha:
        branch = local_branch(root, base)
        pull = " and `git pull --ff-only`" if base.startswith("origin/") else ""
        raise GitError(
            f"--emergency applies the default branch's program, but HEAD is {head[:12]}, not "
            f"{base} ({sha[:12]}): run `git switch {branch}`{pull} (or `git checkout --detach "
            f"{base}`) first"
        )
    dirty = git(root, "status", "--porcelain", "--untracked-files=no", "--", *PROGRAM_FILES)
    if dirty.strip():
        first = dirty.splitlines()[0][3:]
        raise GitError(
            f"--emergency applies the committed program, but {first} has uncommitted changes: "
            "`git stash` them first"
        )
    for stack in stacks:
        now, head_config = read_config(root, stack), read_config_at(root, stack, "HEAD") or {}
        changed = _changed_keys(now, head_config)
        weight = (f"{PROJECT}:{WEIGHT_KEY}", f".{WEIGHT_KEY}")
        others = sorted(k for k in changed if not (k == weight[0] or k.endswith(weight[1])))
        if others:
            raise GitError(
                f"Pulumi.{stack}.yaml has uncommitted changes besides {WEIGHT_KEY} "
                f"({', '.join(others)}): `git stash` them first"
            )
    return base


def _changed_keys(now: dict, head: dict) -> set[str]:
    """The keys that differ between two stack configs; inside `services`, per member key
    (`dualstack-inference:services.chat.ascendWeight`)."""
    services = f"{PROJECT}:services"
    changed = {k for k in set(now) | set(head) if k != services and now.get(k) != head.get(k)}
    new, old = now.get(services), head.get(services)
    if isinstance(new, dict) and isinstance(old, dict):
        for name in set(new) | set(old):
            mine, theirs = new.get(name), old.get(name)
            if isinstance(mine, dict) and isinstance(theirs, dict):
                changed |= {
                    f"{services}.{name}.{k}"
                    for k in set(mine) | set(theirs)
                    if mine.get(k) != theirs.get(k)
                }
            elif mine != theirs:
                changed.add(f"{services}.{name}")
    elif new != old:
        changed.add(services)
    return changed


def write_weights(root: Path, plans: list[StackRollback]) -> None:
    """Write each plan's weight into its stack file in place (no `pulumi config set`: one
    backend call less), read it back and check it. A stack file that does not read back as
    the plan is put back and StackFileError raised, before any Pulumi call."""
    written: list[tuple[Path, bytes]] = []
    try:
        for plan in plans:
            path = stack_path(root, plan.stack)
            written.append((path, path.read_bytes()))
            keys = {old.weight_key: new.ascend_weight for old, new in plan.moved()}
            set_config_values(root, plan.stack, keys)
            back = load_fleet(read_config(root, plan.stack))
            for old, new in plan.moved():
                held = back.members[new.name].ascend_weight
                if held != new.ascend_weight:
                    raise StackFileError(
                        f"{path.name} holds {old.weight_key} {held} after writing "
                        f"{new.ascend_weight}; restored"
                    )
    except Exception:
        for path, original in written:
            put_back(path, original)
        raise


def cancel_args(stack: str) -> list[str]:
    """`pulumi cancel --yes --stack S`: stop the stack's running update, if any."""
    return ["cancel", "--yes", "--stack", stack]


def up_args(stack: str, targets: list[str], message: str) -> list[str]:
    """The traffic-first `pulumi up`: no preview, no refresh, only `targets` (and what depends
    on them), with `message` recorded on the update."""
    flags = [arg for target in targets for arg in ("--target", target)]
    return [
        "up",
        "--yes",
        "--skip-preview",
        "--refresh=false",
        "--stack",
        stack,
        *flags,
        "--target-dependents",
        "--message",
        message,
    ]


@dataclass(frozen=True)
class Stopped:
    """What `pulumi cancel` did: `cancelled` a running update, found `none`, or `failed`."""

    outcome: str
    note: str = ""

    def describe(self, stack: str) -> str:
        """One line for the operator."""
        if self.outcome == "cancelled":
            return f"cancelled the running update of {stack} (pulumi cancel)"
        if self.outcome == "none":
            return f"no update was running on {stack}: nothing to cancel"
        return f"could not cancel on {stack} ({self.note}); the targeted up goes ahead"


def stop_update(root: Path, stack: str) -> Stopped:
    """Run `pulumi cancel --yes --stack S`; never raises (the up that follows decides)."""
    try:
        run_pulumi(root, *cancel_args(stack), timeout=CANCEL_TIMEOUT_S)
    except PulumiCliError as exc:
        if any(phrase in str(exc) for phrase in NOTHING_RUNNING):
            return Stopped("none")
        return Stopped("failed", str(exc))
    return Stopped("cancelled")


@dataclass(frozen=True)
class Applied:
    """One stack's traffic-first apply: what was stopped, the deployed weights read
    ({service: weight in %}; a service missing from it is unknown, {} when the read failed),
    the targets, seconds from the command's start when the stop and the up ended, and the
    up's error (None on success)."""

    stack: str
    stopped: Stopped
    deployed: dict[str, int]
    targets: list[str]
    stopped_at_s: float
    applied_at_s: float
    error: str | None = None


def cluster_side(plan: StackRollback, deployed: Mapping[str, int]) -> Fleet:
    """The stack as the cluster may hold it: each rolled-back service at the higher of git's
    and its deployed weight (`deployed`: {service: weight in %}), the ladder's top when that
    is unknown (missing: NVIDIA may be scaled down)."""
    top = max(plan.before.ladder)
    weights = {}
    for old, _new in plan.moves():
        weights[old.name] = max(old.ascend_weight, deployed.get(old.name, top))
    return load_fleet(config_with_weights(plan.config, weights))


def targets_for(plan: StackRollback, deployed: Mapping[str, int]) -> list[str]:
    """`weight_targets` from the cluster's side (`cluster_side`) to the rolled-back services
    (only theirs: a fleet member not rolled back is not targeted); `deployed` as there."""
    cluster = cluster_side(plan, deployed)
    after = plan.fleet_after.only(plan.services)
    return weight_targets(cluster.only(plan.services), after, plan.stack)


def traffic_first(
    root: Path, plan: StackRollback, message: str, started: float, clock: Callable[[], float]
) -> Applied:
    """Stop, read the deployed weight (side by side), then apply the targets of one stack.

    `started`: the command's start on `clock` (seconds). Never raises: the outcome is in the
    returned Applied, so one stack's failure does not hold back the others of `--all`.
    """
    with ThreadPoolExecutor(max_workers=2) as pool:
        stopping = pool.submit(stop_update, root, plan.stack)
        reading = pool.submit(_deployed, root, plan.stack, plan.fleet_before)
        stopped, deployed = stopping.result(), reading.result()
    stopped_at = clock() - started
    targets = targets_for(plan, deployed)
    error = None
    try:
        run_pulumi(root, *up_args(plan.stack, targets, message), timeout=UP_TIMEOUT_S)
    except PulumiCliError as exc:
        error = str(exc)
    return Applied(plan.stack, stopped, deployed, targets, stopped_at, clock() - started, error)


def _deployed(root: Path, stack: str, fleet: Fleet) -> dict[str, int]:
    """The deployed weights of `fleet`'s stack; {} when they cannot be read."""
    try:
        return read_fleet_weights(root, stack, fleet, timeout=CANCEL_TIMEOUT_S)
    except StackOutputError:
        return {}


def apply_fleet(
    root: Path,
    plans: list[StackRollback],
    message: Callable[[StackRollback], str],
    started: float,
    clock: Callable[[], float] = time.monotonic,
) -> list[Applied]:
    """`traffic_first` for every plan, all stacks at once (separate stacks, separate locks);
    results in the plans' order, timed from `started` on `clock`."""
    with ThreadPoolExecutor(max_workers=max(1, len(plans))) as pool:
        futures = [
            pool.submit(traffic_first, root, plan, message(plan), started, clock) for plan in plans
        ]
        return [future.result() for future in futures]


def pending_operations(root: Path, stack: str) -> list[str]:
    """`<operation> <URN>` for each pending operation in `pulumi stack export --stack S`
    (`deployment.pending_operations[*].type` and `.resource.urn`): what a cancelled update
    left in the state. [] when the export fails or holds none (it is advice, never a gate)."""
    try:
        text = run_pulumi(root, "stack", "export", "--stack", stack, timeout=CANCEL_TIMEOUT_S)
        operations = json.loads(text).get("deployment", {}).get("pending_operations") or []
    except (PulumiCliError, json.JSONDecodeError, AttributeError):
        return []
    return [
        f"{op.get('type', '?')} {op.get('resource', {}).get('urn', '?')}"
        for op in operations
        if isinstance(op, dict)
    ]


def rollback_branch(root: Path, plans: list[StackRollback], branch: str | None) -> str:
    """The branch the git step commits on: `branch`, or `dualstack/<stack>-rollback-<N>`
    (`dualstack/rollback-all` for several stacks) with `-2`, `-3`, ... when taken.

    Raises GitError for an invalid or taken explicit `branch` (checked before anything)."""
    if branch is not None:
        return choose_branch(root, branch)
    if len(plans) == 1 and len(plans[0].services) == 1 and plans[0].after.member is not None:
        plan = plans[0]
        name = f"dualstack/{plan.stack}-{plan.after.member}-rollback-{plan.after.ascend_weight}"
    elif len(plans) == 1:
        name = f"dualstack/{plans[0].stack}-rollback-{plans[0].after.ascend_weight}"
    else:
        name = "dualstack/rollback-all"
    return choose_branch(root, name, free_name=True)


def commit_rollback(root: Path, plans: list[StackRollback], branch: str, message: str) -> str:
    """Commit the changed stack files (only those) on new `branch` from HEAD; its short id.

    The files are never put back on failure: the cluster already carries their weights, and
    git must come to say the same. Raises GitError naming git's complaint.
    """
    names = [stack_path(Path(), p.stack).name for p in plans if p.changes_git]
    git(root, "checkout", "-q", "-b", branch)
    git(root, "add", "--", *names)
    git(root, "commit", "-q", "-m", message, "--", *names)
    return git(root, "rev-parse", "--short", "HEAD").strip()
