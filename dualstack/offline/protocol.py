"""The judge protocol's messages: `JudgeRequest` (the head, as data) and `Verdict` (the base's
answer), each read from and written to the wire in one place (`from_wire`, `to_wire`).

`dualstack.offline.judge` answers a request (the base's side); `dualstack.offline.judge_client`
starts a base's judge before the caller imports anything heavy (the program, pulumi), so the
base renders while the head's process is still loading. So this module imports nothing heavy:
the standard library and the policy results' dataclass.

The wire is JSON, versioned by `PROTOCOL`: a base of any commit judges a head of any other
that speaks the same version, so the shapes below change only with the version.

Request (stdin of `dualstack ci judge --stack S --protocol 1`): `{"protocol": 1, "stack": S,
"headRoot": DIR, "headConfig": {...} | null, "headObjects": [...] | null, "ownerApproved":
bool, "previousWeight": N | {service: N | null} | null}`; `headConfig` null means "read DIR's
stack file", `headObjects` null means "no pack run" (`policy-config`), `previousWeight` absent
means "the base's own weights".

Verdict (stdout): `{"protocol", "stack", "pack", "baseCommit", "firstDeploy", "base":
{ascendWeight, replicas, images, verifiedImages[, services: {name: the same keys}]} | null,
"baseObjects", "previousWeight", "ownerApproved", "envelope": [{fact, before, after, kind}],
"packConfig", "results": [{policy, enforcement, outcome, message, resource}] | null}`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from dualstack.offline.policy_results import PolicyResult

if TYPE_CHECKING:
    from dualstack.offline.envelope import EnvelopeChange

T = TypeVar("T")

PROTOCOL = 1
"""Version of the request and response shapes; a base that speaks another one cannot judge."""

BASE_WEIGHT: Literal["base"] = "base"
"""`previous_weight` meaning "the weight of the base's stack config" (the offline preview)."""

Weights = int | dict[str, int | None] | None
"""A previous (deployed) weight as the wire carries it: one number (a single-service stack),
`{service: weight or None}` (a fleet), or None (never deployed: a first deploy)."""


class JudgeError(RuntimeError):
    """The base cannot judge the head (fail closed: exit 2, never a first deploy)."""


def _is_weight(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _weights(value: Any, where: str) -> Weights:
    """`value` as `Weights`. Raises JudgeError naming `where` when it is none of its forms."""
    if isinstance(value, dict):
        if all(isinstance(k, str) and (w is None or _is_weight(w)) for k, w in value.items()):
            return value
        raise JudgeError(f"{where}: previousWeight {_shown(value)} is not a map of weights")
    if value is None or _is_weight(value):
        return value
    raise JudgeError(f"{where}: previousWeight {_shown(value)} is not a weight")


def _message(message: Any, what: str) -> Mapping[str, Any]:
    """`message` when it is a JSON object of this protocol. Raises JudgeError."""
    if not isinstance(message, Mapping):
        raise JudgeError(f"{what}: expected a JSON object, got {type(message).__name__}")
    if message.get("protocol") != PROTOCOL:
        raise JudgeError(f"{what} speaks protocol {message.get('protocol')!r}, not {PROTOCOL}")
    return message


def _field(message: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    """`message[key]`, of `kind` (None allowed when `kind` holds NoneType). Raises JudgeError
    naming the key when it is missing or of another type."""
    if key not in message:
        raise JudgeError(f"{what}: {key} is missing")
    value = message[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        raise JudgeError(f"{what}: {key} {_shown(value)} is not {_names(kind)}")
    return value


def _items(kind: Callable[..., T], entries: list[Any], what: str) -> list[T]:
    """`kind(**entry)` for each entry of a list of the wire. Raises JudgeError naming the
    entry (`what[i]`) that is not an object of `kind`'s fields."""
    items = []
    for index, fields in enumerate(entries):
        if not isinstance(fields, Mapping):
            raise JudgeError(f"{what}[{index}] {_shown(fields)} is not an object")
        try:
            items.append(kind(**fields))
        except TypeError as exc:
            raise JudgeError(
                f"{what}[{index}] {_shown(dict(fields))} is malformed: {exc}"
            ) from None
    return items


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _names(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", bool: "true or false", int: "a number", dict: "an object"}
    names |= {list: "a list", type(None): "null"}
    return " or ".join(names[k] for k in _kinds(kind))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:60]}…"


@dataclass(frozen=True)
class JudgeRequest:
    """The head, as the base's judge reads it: the stack, the head's tree (`head_root`, for
    the program files git compares with the base), its stack config (None: read it from
    `head_root`), its rendered objects (None: judge the config only, no pack run), whether
    the owners approved, and the previous (deployed) weight (`BASE_WEIGHT`: the base's own)."""

    stack: str
    head_root: Path
    head_config: dict[str, Any] | None
    head_objects: list[dict[str, Any]] | None
    owner_approved: bool = False
    previous_weight: Weights | Literal["base"] = BASE_WEIGHT

    def to_wire(self) -> dict[str, Any]:
        """The request as JSON-ready data (see the module docstring)."""
        message: dict[str, Any] = {
            "protocol": PROTOCOL,
            "stack": self.stack,
            "headRoot": str(self.head_root),
            "headConfig": None if self.head_config is None else dict(self.head_config),
            "headObjects": None if self.head_objects is None else list(self.head_objects),
            "ownerApproved": self.owner_approved,
        }
        if self.previous_weight != BASE_WEIGHT:
            message["previousWeight"] = self.previous_weight
        return message

    @classmethod
    def from_wire(cls, message: Any) -> JudgeRequest:
        """A request read from decoded JSON. Raises JudgeError naming what is malformed."""
        what = "request"
        message = _message(message, what)
        previous = message.get("previousWeight", BASE_WEIGHT)
        if previous != BASE_WEIGHT:
            previous = _weights(previous, what)
        return cls(
            _field(message, "stack", str, what),
            Path(_field(message, "headRoot", str, what)),
            _field(message, "headConfig", (dict, type(None)), what),
            _field(message, "headObjects", (list, type(None)), what),
            message.get("ownerApproved", False) is True,
            previous,
        )


@dataclass(frozen=True)
class BaseSummary:
    """One service of the base as its own code sees it: its weight (%), replicas and image
    by hardware, the verified image pairs (policy config `verifiedImages`); for a fleet, the
    first service's beside `services` ({name: each service's summary}); None: a single
    service."""

    ascend_weight: int
    replicas: dict[str, int]
    images: dict[str, str]
    verified_images: list[dict[str, str]]
    services: dict[str, BaseSummary] | None = None

    def member(self, name: str) -> BaseSummary | None:
        """Service `name`'s summary (a fleet's member, or this one of a single-service base);
        None when the base's fleet has no such service (new in the head)."""
        return self if self.services is None else self.services.get(name)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "ascendWeight": self.ascend_weight,
            "replicas": self.replicas,
            "images": self.images,
            "verifiedImages": self.verified_images,
        }
        if self.services is not None:
            wire["services"] = {name: s.to_wire() for name, s in self.services.items()}
        return wire

    @classmethod
    def from_wire(cls, wire: Any, what: str = "verdict: base") -> BaseSummary:
        """A summary read from decoded JSON. Raises JudgeError naming what is malformed."""
        if not isinstance(wire, Mapping):
            raise JudgeError(f"{what} {_shown(wire)} is not an object")
        services = _field(wire, "services", dict, what) if "services" in wire else None
        return cls(
            _field(wire, "ascendWeight", int, what),
            _field(wire, "replicas", dict, what),
            _field(wire, "images", dict, what),
            _field(wire, "verifiedImages", list, what),
            None
            if services is None
            else {n: cls.from_wire(s, f"{what}.services.{n}") for n, s in services.items()},
        )


@dataclass(frozen=True)
class Verdict:
    """The base's judgement of a head: the base's commit and summary (None: the stack file is
    absent at the base, a first deploy) and rendered objects, the previous weight judged
    against, the envelope changes, the pack config and the pack's results (None: no pack run,
    the request had no objects)."""

    stack: str
    pack: str
    base_commit: str
    base: BaseSummary | None
    base_objects: list[dict[str, Any]]
    previous_weight: Weights
    owner_approved: bool
    envelope: list[EnvelopeChange]
    pack_config: dict[str, Any]
    results: list[PolicyResult] | None

    @property
    def first_deploy(self) -> bool:
        """True when the stack file is absent at the base (nothing deployed to compare)."""
        return self.base is None

    def to_wire(self) -> dict[str, Any]:
        """The verdict as JSON-ready data (see the module docstring)."""
        return {
            "protocol": PROTOCOL,
            "stack": self.stack,
            "pack": self.pack,
            "baseCommit": self.base_commit,
            "firstDeploy": self.first_deploy,
            "base": None if self.base is None else self.base.to_wire(),
            "baseObjects": self.base_objects,
            "previousWeight": self.previous_weight,
            "ownerApproved": self.owner_approved,
            "envelope": [change.as_fact() for change in self.envelope],
            "packConfig": self.pack_config,
            "results": None if self.results is None else [asdict(r) for r in self.results],
        }

    @classmethod
    def from_wire(cls, message: Any) -> Verdict:
        """A verdict read from decoded JSON. Raises JudgeError naming what is malformed (the
        caller says whose verdict it is)."""
        from dualstack.offline.envelope import EnvelopeChange

        what = "verdict"
        message = _message(message, what)
        base = _field(message, "base", (dict, type(None)), what)
        first = _field(message, "firstDeploy", bool, what)
        if first != (base is None):
            raise JudgeError(f"{what}: firstDeploy {first} but base is {_shown(base)}")
        results = _field(message, "results", (list, type(None)), what)
        envelope = _field(message, "envelope", list, what)
        changes = _items(EnvelopeChange, envelope, f"{what}: envelope")
        judged = None if results is None else _items(PolicyResult, results, f"{what}: results")
        return cls(
            _field(message, "stack", str, what),
            _field(message, "pack", str, what),
            _field(message, "baseCommit", str, what),
            None if base is None else BaseSummary.from_wire(base),
            _field(message, "baseObjects", list, what),
            _weights(message.get("previousWeight"), what),
            _field(message, "ownerApproved", bool, what),
            changes,
            _field(message, "packConfig", dict, what),
            judged,
        )
