"""The safety envelope: what a pull request changes besides a migration step, fact by fact.

A step changes one stack's `ascendWeight` and/or its two images (`STEP_FACTS`), and may lower
the mirrored share (`STEP_LOWERS`: the step leaving the shadow rung writes `mirrorPercent: 0`,
`dualstack.step.weights`). Everything else the judged stack depends on is the envelope: every
other key of its stack file (any namespace: `capacity.totalReplicas`, `ascend.pool.labels`,
`router`, `testerPinning.header`, `bakeTime`, a raise of `mirrorPercent`, `kubernetes:context`,
...) and its keys outside `config:` (an ESC `environment`, the `secretsprovider`), the evidence
keys (`EVIDENCE_FACTS`: the verified images are written by the verification job, never by the
change itself), and every file of the program, the pack, the CLI, the checker, the dependency
files and the pipelines: every path but the stack files and the documentation and tests
(`dualstack.repo.changes.touches_program`, one definition, fail closed). Policy
`safety-envelope-unchanged` fails on any of them without the owners' approval
(`policies/envelope.py`).

This module runs in the BASE's code (`dualstack.offline.judge`): the head is only read as
data, its stack config as a mapping and its tree through git.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.settings import HARDWARE, PROJECT, Fleet
from components.settings.fleet import FLEET_HARDWARE_KEYS, FLEET_KEYS, SERVICES_KEY
from dualstack.repo.changes import is_link, stack_of, touches_program, tree_changes
from dualstack.repo.stackfile import (
    parse_config,
    parse_outside_config,
    read_text,
    show_stack_text,
    stack_path,
)

STEP_FACTS = frozenset(
    {f"{PROJECT}:ascendWeight", f"{PROJECT}:nvidia.image", f"{PROJECT}:ascend.image"}
)
"""The config facts a migration step may change on its own (dotted paths into the config)."""

STEP_LOWERS = frozenset({f"{PROJECT}:mirrorPercent"})
"""Config facts a step may lower on its own (a number that falls, as both sides' settings
resolve it): the share mirrored to Ascend at weight 0. Lowering it puts less load on Ascend and
serves nobody differently, like a weight decrease (never blocked); it is how a promotion leaves
the shadow rung. A raise, or a value that is not a number, is an envelope change."""

EVIDENCE_FACTS = frozenset({f"{PROJECT}:verifiedAscendImage", f"{PROJECT}:verifiedImages"})
"""Evidence the verification job records (`dualstack verify-precision`); a change of them in a
pull request is an envelope change, and the judge reads them from the base only."""

_MEMBER = re.escape(f"{PROJECT}:{SERVICES_KEY}.") + r"[^.]+\."
STEP_PATTERN = re.compile(f"{_MEMBER}(ascendWeight|nvidia\\.image|ascend\\.image)")
"""A fleet member's step facts: `services.<name>.ascendWeight` and its two images."""
WEIGHT_PATTERN = re.compile(f"{_MEMBER}ascendWeight")
"""A fleet member's weight: `services.<name>.ascendWeight`."""
LOWERS_PATTERN = re.compile(f"{_MEMBER}mirrorPercent")
"""A fleet member's `STEP_LOWERS` facts: `services.<name>.mirrorPercent`."""
EVIDENCE_PATTERN = re.compile(f"{_MEMBER}(verifiedAscendImage|verifiedImages)(\\..*)?")
"""A fleet member's evidence: `services.<name>.verifiedImages` (and the older key)."""


def is_step_fact(path: str) -> bool:
    """True for a fact a migration step may change: a service's weight or one of its images."""
    return path in STEP_FACTS or STEP_PATTERN.fullmatch(path) is not None


def is_weight(path: str) -> bool:
    """True for a service's weight: `ascendWeight` or `services.<name>.ascendWeight`."""
    return path == f"{PROJECT}:ascendWeight" or WEIGHT_PATTERN.fullmatch(path) is not None


def is_step_lowering(path: str) -> bool:
    """True for a fact a step may lower on its own (a service's mirrored share)."""
    return path in STEP_LOWERS or LOWERS_PATTERN.fullmatch(path) is not None


def is_evidence(path: str) -> bool:
    """True for a fact the verification job records (a service's verified images)."""
    return path.partition(".")[0] in EVIDENCE_FACTS or EVIDENCE_PATTERN.fullmatch(path) is not None


UNSET = "(unset)"
"""How a fact absent on one side is shown."""


@dataclass(frozen=True)
class EnvelopeChange:
    """One changed fact: `fact` is a config path (`capacity.totalReplicas`, or
    `kubernetes:context` for another namespace) or a repo path (`policies/traffic.py`);
    `before` and `after` are display texts; `kind` is `config`, `evidence`, `file` or `stack`."""

    fact: str
    before: str
    after: str
    kind: str

    def describe(self) -> str:
        """`capacity.totalReplicas: 4 -> 1`, `file policies/traffic.py: at base -> modified`."""
        where = f"file {self.fact}" if self.kind == "file" else self.fact
        return f"{where}: {self.before} -> {self.after}"

    def as_fact(self) -> dict[str, str]:
        """The shape of policy config `envelopeChanges` entries."""
        return {"fact": self.fact, "before": self.before, "after": self.after, "kind": self.kind}


def _decoded(value: Any) -> Any:
    """Structured values as Pulumi hands them over (JSON text) decoded; others as they are."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _leaves(prefix: str, value: Any) -> Iterator[tuple[str, Any]]:
    """(dotted path, leaf) of a config value; mappings are walked, lists and `secure:` values
    are leaves."""
    value = _decoded(value)
    if isinstance(value, Mapping) and value and set(value) != {"secure"}:
        for key, inner in value.items():
            yield from _leaves(f"{prefix}.{key}", inner)
    else:
        yield prefix, value


def flatten(config: Mapping[str, Any]) -> dict[str, Any]:
    """A stack config as {dotted path: leaf}: `{"dualstack-inference:capacity":
    {"totalReplicas": 1}}` -> `{"dualstack-inference:capacity.totalReplicas": 1}`."""
    return {path: leaf for key, value in config.items() for path, leaf in _leaves(key, value)}


def _normal(value: Any) -> Any:
    """A leaf in comparable form: `pulumi config set` stores "4" where YAML may say 4."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _normal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    return value


def _text(value: Any, present: bool) -> str:
    if not present:
        return UNSET
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return str(_normal(value))
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


def _falls(before: Any, after: Any) -> bool:
    """True when both are numbers (or number texts, as `pulumi config` stores them) and
    `after` is the smaller."""
    try:
        return float(_normal(after)) < float(_normal(before))
    except (TypeError, ValueError):
        return False


def _shown(path: str) -> str:
    """Project keys without their namespace (`capacity.totalReplicas`); others in full."""
    return path.removeprefix(f"{PROJECT}:")


def settings_dump(settings: Fleet) -> dict[str, Any]:
    """The project's keys as the settings resolve them, in stack-file shape (the edge where a
    single-service stack keeps its own): its one service's dump, or for a declared fleet the
    shared keys at the top and each member's own (everything else, inherited values
    included) under `services.<name>`."""
    if not settings.declared:
        return settings.first.model_dump(by_alias=True, mode="json")
    first = settings.first.model_dump(by_alias=True, mode="json")
    dumped: dict[str, Any] = {key: first[key] for key in FLEET_KEYS}
    for hw in HARDWARE:
        dumped[hw] = {key: first[hw][key] for key in FLEET_HARDWARE_KEYS if key in first[hw]}
    services = {}
    for name, member in settings.members.items():
        own = member.model_dump(by_alias=True, mode="json")
        for key in FLEET_KEYS:
            own.pop(key, None)
        for hw in HARDWARE:
            own[hw] = {k: v for k, v in own[hw].items() if k not in FLEET_HARDWARE_KEYS}
        services[name] = own
    dumped[SERVICES_KEY] = services
    return dumped


def effective(config: Mapping[str, Any], settings: Fleet | None) -> dict[str, Any]:
    """{dotted path: leaf} of a stack config: the project's keys as the settings resolve them
    (defaults included, so an explicit default is no change) when `settings` is given, else
    as written; other namespaces (`kubernetes:context`, ...) as written."""
    raw = flatten(config)
    if settings is None:
        return raw
    ours = f"{PROJECT}:"
    dumped = settings_dump(settings)
    values = {path: leaf for path, leaf in raw.items() if not path.startswith(ours)}
    values.update(flatten({f"{ours}{key}": value for key, value in dumped.items()}))
    return {path: leaf for path, leaf in values.items() if leaf is not None}


def _layout(side: Fleet, other: Fleet) -> dict[str, Any]:
    """The layout as a fact of the side that declares `services` when the other does not:
    {`services`: its member names}; {} otherwise."""
    if side.declared and not other.declared:
        return {f"{PROJECT}:{SERVICES_KEY}": side.names}
    return {}


def config_changes(
    base: Mapping[str, Any],
    head: Mapping[str, Any],
    base_settings: Fleet | None = None,
    head_settings: Fleet | None = None,
) -> list[EnvelopeChange]:
    """Every config fact that differs between the base and the head stack config, except the
    step facts (`STEP_FACTS`), sorted by path: resolved through both sides' settings (read
    by the base's code) when both are given, else as written. Values compare as `pulumi
    config` stores them (4 and "4" are equal); a fact absent on one side shows `(unset)`. A
    fall of a `STEP_LOWERS` fact is part of the step, not listed.

    A stack without `services` converted into a fleet of one (or back) is compared in the
    head's layout (`Fleet.laid_out_as`: the base's one service under the head's name), so
    only what the conversion really changes is listed: the layout itself, as `services:
    (unset) -> ["name"]` (the alerts, the dashboard and the stack's outputs follow it), and
    each key that differs, such as the object names a member takes from its name."""
    if base_settings is None or head_settings is None:
        before, after = effective(base, None), effective(head, None)
    else:
        before = effective(base, base_settings.laid_out_as(head_settings))
        after = effective(head, head_settings)
        before.update(_layout(base_settings, head_settings))
        after.update(_layout(head_settings, base_settings))
    changes = []
    for path in sorted(set(before) | set(after)):
        if is_step_fact(path):
            continue
        old, new = before.get(path), after.get(path)
        if path in before and path in after and _normal(old) == _normal(new):
            continue
        if is_step_lowering(path) and _falls(old, new):
            continue
        kind = "evidence" if is_evidence(path) else "config"
        changes.append(
            EnvelopeChange(
                _shown(path), _text(old, path in before), _text(new, path in after), kind
            )
        )
    return changes


_STATUS = {"A": ("absent", "added"), "D": ("present", "deleted"), "M": ("at base", "modified")}


def _file_change(path: str, status: str) -> EnvelopeChange:
    """`file <path>: at base -> modified`; a symlink on either side says so: `changed (a
    symlink)`."""
    before, after = _STATUS.get(status[:1], ("at base", "changed"))
    return EnvelopeChange(
        path, before, f"{after} (a symlink)" if is_link(status) else after, "file"
    )


def file_changes(head_root: Path, base_commit: str) -> list[EnvelopeChange]:
    """The program files (`touches_program`) that differ between `base_commit` and the head's
    working tree at `head_root`: committed, staged, unstaged and untracked (not ignored)
    (`dualstack.repo.changes.tree_changes`).

    Paths are relative to `head_root` (the folder holding `Pulumi.yaml`). Raises GitError
    when git cannot compare (e.g. the base commit is not in the head's repository).
    """
    return [
        _file_change(path, status)
        for path, status in sorted(tree_changes(head_root, base_commit).items())
        if touches_program(path, status)
    ]


def stack_settings_changes(head_root: Path, base_commit: str, stack: str) -> list[EnvelopeChange]:
    """The keys of `Pulumi.<stack>.yaml` outside `config:` that differ between `base_commit`
    and the head's tree, as `Pulumi.prod.yaml environment: (unset) -> ["team/prod"]`: an ESC
    `environment` feeds config to `pulumi up` that no judge sees, a `secretsprovider` decides
    who can read the secrets (`dualstack.repo.stackfile.parse_outside_config`). None when the
    file is absent at the base (the whole file is the change).

    Raises StackFileError when either side cannot be read, GitError when git cannot.
    """
    path = stack_path(head_root, stack)
    base_text = show_stack_text(head_root, base_commit, path.name)
    if base_text is None:
        return []
    before = parse_outside_config(base_text, f"{base_commit[:12]}:{path.name}")
    after = parse_outside_config(read_text(path), path.name)
    return [
        EnvelopeChange(
            f"{path.name} {key}",
            _text(before.get(key), key in before),
            _text(after.get(key), key in after),
            "stack",
        )
        for key in sorted(set(before) | set(after))
        if key not in before or key not in after or _normal(before[key]) != _normal(after[key])
    ]


def other_stack_changes(head_root: Path, base_commit: str, stack: str) -> list[EnvelopeChange]:
    """The other stacks' files the same change adds, deletes or modifies, as `file
    Pulumi.staging.yaml: at base -> modified`: a step moves one stack (two raised at once
    would skip the staging rung's data gate before prod), so they are envelope facts of
    `stack` too, except a file that only lowers its stack's `ascendWeight` (a rollback,
    `dualstack rollback --all` commits every stack's).

    Raises StackFileError when a side cannot be read, GitError when git cannot compare.
    """
    changes = []
    for path, status in sorted(tree_changes(head_root, base_commit).items()):
        other = stack_of(path)
        if other is None or other == stack or is_link(status):
            continue  # a symlink is a program file (`file_changes`)
        if (
            status == "M"
            and other.casefold() != stack.casefold()  # the judged file on macOS or Windows
            and _lowers_weight_only(head_root, base_commit, other)
        ):
            continue
        changes.append(_file_change(path, status))
    return changes


def _lowers_weight_only(head_root: Path, base_commit: str, stack: str) -> bool:
    """True when `Pulumi.<stack>.yaml` differs from the base only by lower weights: its
    `ascendWeight`, or its fleet members' `services.<name>.ascendWeight`, none raised."""
    name = stack_path(head_root, stack).name
    before_text = show_stack_text(head_root, base_commit, name) or ""
    after_text = read_text(stack_path(head_root, stack))
    if parse_outside_config(before_text, name) != parse_outside_config(after_text, name):
        return False
    before = flatten(parse_config(before_text, name))
    after = flatten(parse_config(after_text, name))
    weights = {path for path in set(before) | set(after) if is_weight(path)}
    if {p: v for p, v in before.items() if p not in weights} != {
        p: v for p, v in after.items() if p not in weights
    }:
        return False
    pairs = [(str(before.get(path, "")), str(after.get(path, ""))) for path in weights]
    if not pairs or not all(old.isdigit() and new.isdigit() for old, new in pairs):
        return False
    return all(int(new) <= int(old) for old, new in pairs) and any(
        int(new) < int(old) for old, new in pairs
    )


def envelope_changes(
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any],
    files: list[EnvelopeChange],
    stack: str,
    settings: tuple[Fleet | None, Fleet | None] = (None, None),
) -> list[EnvelopeChange]:
    """The whole envelope diff: the stack file itself when it is new at the base (a first
    deploy), else its config changes (`settings`: base and head as the base's code reads
    them, see `config_changes`); then the program files."""
    if base is None:
        stack_file = EnvelopeChange(f"Pulumi.{stack}.yaml", "absent", "added", "stack")
        return [stack_file, *files]
    return [*config_changes(base, head, *settings), *files]
