"""A fleet: the services one stack runs on the two shared node pools, each on its own rung.

A stack file without `services` is a fleet of one: its keys are the single service, exactly as
before (`pulumi config set ascendWeight 20` stays the quick start). With `services`, the stack's
keys hold what the fleet shares and what every member inherits, and each member
(`services.<name>`) holds its own weight and whatever it sets differently:

```yaml
config:
  dualstack-inference:ascend:              # the pools, once per stack
    pool: {nodes: [ascend-01, ascend-02]}
  dualstack-inference:services:
    chat:
      ascendWeight: 20        # pulumi config set --path 'services.chat.ascendWeight' 20
      ascend: {image: registry/chat:v2.0.0-npu}
    embedder:
      ascendWeight: 0
      capacity: {totalReplicas: 2}
```

- Once per stack (`FLEET_KEYS`, `FLEET_HARDWARE_KEYS`): `ladder`, `namespace`, `policy`,
  `security`, `monitoring`, `testerPinning` (one pin header for every service), and each
  backend's `pool`, `acceleratorResource` and `driverHostPath`. A member setting one is
  refused.
- Per member only (`MEMBER_ONLY`): `ascendWeight`, `mirrorPercent` (the shadow rung) and the
  evidence (`verifiedImages`, `verifiedAscendImage`); with `services` they may not stand at
  the stack level.
- Named after the member (`member_names`): the shared Service and `app` label `<name>`, the
  Deployments `<name>-blue` / `<name>-green`, the VirtualService `<name>-vs`, the
  DestinationRule `<name>-dr` and the HTTPRoute `<name>-route`; these may not be set at the
  stack level either.
- Everything else (images, capacity, probes, resources, scratch, Istio API version, gateways
  and hosts, SLOs, the precision check) is inherited from the stack's keys and may be set per
  member; mappings merge key by key, lists replace.

`components.settings.loading.load_fleet()` validates the stack's keys once, then every member
as a full `Settings` (`Settings.member` is its name), and checks what only the fleet can see
(`clashes`): no two members share an object name. This module holds those rules; the loader
applies them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from components import api_rules
from components.settings.model import HARDWARE, PROJECT, Settings, SettingsError
from components.settings.names import direct_service_name, precision_prefix
from components.settings.scalars import shown

SERVICES_KEY = "services"
FLEET_KEYS = frozenset({"ladder", "namespace", "policy", "security", "monitoring", "testerPinning"})
"""Stack-level keys a member may not set: the fleet shares them."""
FLEET_HARDWARE_KEYS = frozenset({"pool", "acceleratorResource", "driverHostPath"})
"""Keys of `nvidia` / `ascend` a member may not set: the node pools are the stack's, once."""
MEMBER_ONLY = frozenset({"ascendWeight", "mirrorPercent", "verifiedImages", "verifiedAscendImage"})
"""Keys that belong to one member: never inherited, refused at the stack level of a fleet (a
member's rung is its weight and its mirrored share)."""
MAX_MEMBER_NAME = 56
"""A member's name is its Service name: a DNS-1035 label with room for `-nvidia`."""


def member_names(name: str) -> dict[str, Any]:
    """The object names a member gets from its name (stack-file shape, camelCase)."""
    return {
        "service": {"name": name},
        "nvidia": {"deploymentName": f"{name}-blue"},
        "ascend": {"deploymentName": f"{name}-green"},
        "istio": {"virtualServiceName": f"{name}-vs", "destinationRuleName": f"{name}-dr"},
        "gatewayApi": {"routeName": f"{name}-route"},
    }


def _named_paths() -> set[tuple[str, str]]:
    return {(key, inner) for key, value in member_names("x").items() for inner in value}


@dataclass(frozen=True)
class Fleet:
    """The services of one stack, by name, in stack-file order. `declared` is False for a
    stack without `services` (one implicit member, named `service.name`)."""

    members: Mapping[str, Settings]
    declared: bool

    @property
    def names(self) -> list[str]:
        """The members' names, in stack-file order."""
        return list(self.members)

    @property
    def first(self) -> Settings:
        """Any member: what the fleet shares (pools, namespace, ladder) is equal in all."""
        return next(iter(self.members.values()))

    def __iter__(self) -> Iterator[Settings]:
        return iter(self.members.values())

    def __len__(self) -> int:
        return len(self.members)

    @classmethod
    def of(cls, *services: Settings) -> Fleet:
        """A fleet of these services, in this order: `services.<name>` members (`declared`),
        or the stack's single implicit service (a fleet of one)."""
        return cls({s.name: s for s in services}, any(s.member is not None for s in services))

    def only(self, names: Iterable[str]) -> Fleet:
        """The same stack with only the members `names` (in that order); KeyError for a name
        it does not hold."""
        return Fleet({name: self.members[name] for name in names}, self.declared)

    def laid_out_as(self, other: Fleet) -> Fleet:
        """This fleet in `other`'s layout. Converting a stack without `services` into a fleet
        of one, or back (one service on each side, one side declared), keeps the one service:
        it is returned as `other`'s only member, under `other`'s name and `declared` as
        `other`, its settings this fleet's. Any other pair: this fleet as it is."""
        if len(self) != 1 or len(other) != 1 or self.declared == other.declared:
            return self
        return Fleet({other.names[0]: self.first}, declared=other.declared)

    @property
    def weights(self) -> dict[str, int]:
        """{service: Ascend weight in %}, in fleet order."""
        return {name: settings.ascend_weight for name, settings in self.members.items()}

    def member(self, name: str | None = None) -> Settings:
        """The member called `name`; without a name, the only one.

        Raises SettingsError naming the members when `name` is unknown, or None while the
        stack holds several.
        """
        if name is None and len(self.members) == 1:
            return self.first
        if name is not None and name in self.members:
            return self.members[name]
        listed = ", ".join(self.members)
        if name is None:
            raise SettingsError(
                f"this stack holds {len(self.members)} services ({listed}): pass --service NAME"
            )
        raise SettingsError(f"--service {shown(name)}: no such service; this stack holds {listed}")


def _problem(path: str, value: Any, why: str) -> str:
    return f"{PROJECT}:{path} = {shown(value)}: {why}"


def _member_problems(name: str, member: Mapping[str, Any]) -> list[str]:
    """One line per key a member may not set."""
    problems = []
    where = f"{SERVICES_KEY}.{name}"
    for key, value in member.items():
        if key in FLEET_KEYS or key == SERVICES_KEY:
            problems.append(
                _problem(
                    f"{where}.{key}",
                    value,
                    f"the fleet shares it; set it once per stack as {PROJECT}:{key}",
                )
            )
        elif key in HARDWARE and isinstance(value, Mapping):
            for inner in sorted(FLEET_HARDWARE_KEYS & set(value)):
                problems.append(
                    _problem(
                        f"{where}.{key}.{inner}",
                        value[inner],
                        f"the node pools are the stack's; set it once as {PROJECT}:{key}.{inner}",
                    )
                )
        if key == "service" and isinstance(value, Mapping) and "name" in value:
            problems.append(
                _problem(
                    f"{where}.service.name",
                    value["name"],
                    f"a member's Service is named after it ({name}); rename the member instead",
                )
            )
    return problems


def _stack_level_problems(raw: Mapping[str, Any]) -> list[str]:
    """One line per stack-level key a fleet may not have (see the module docstring)."""
    problems = [
        _problem(
            key,
            raw[key],
            f"with `{SERVICES_KEY}`, every service has its own; set "
            f"{SERVICES_KEY}.<name>.{key} instead",
        )
        for key in sorted(MEMBER_ONLY & set(raw))
    ]
    for key, inner in sorted(_named_paths()):
        value = raw.get(key)
        if isinstance(value, Mapping) and inner in value:
            problems.append(
                _problem(
                    f"{key}.{inner}",
                    value[inner],
                    f"with `{SERVICES_KEY}`, each service's objects are named after it; remove it",
                )
            )
    return problems


def layout_problems(raw: Mapping[str, Any], services: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per key set where the fleet does not take it: at the stack level (`raw`, the
    stack's keys without `services`) or in a member of `services` (the module docstring)."""
    problems = _stack_level_problems(raw)
    return problems + [
        p for name, member in services.items() for p in _member_problems(name, member)
    ]


def declared_services(raw: Any) -> dict[str, Mapping[str, Any]]:
    """The `services` mapping, checked: a non-empty mapping of DNS-1035 names to mappings.

    Raises SettingsError, one line per bad name or member."""
    if not isinstance(raw, Mapping) or not raw:
        raise SettingsError(
            _problem(SERVICES_KEY, raw, "expected a mapping of service names to their settings")
        )
    problems = []
    for name, member in raw.items():
        why = api_rules.dns1035_label(name) if isinstance(name, str) else "not a string"
        if why is None and len(name) > MAX_MEMBER_NAME:
            why = f"more than {MAX_MEMBER_NAME} characters (its Service adds -nvidia)"
        if why:
            problems.append(_problem(f"{SERVICES_KEY}.{name}", name, f"the service name is {why}"))
        elif not isinstance(member, Mapping):
            problems.append(_problem(f"{SERVICES_KEY}.{name}", member, "expected a mapping"))
    if problems:
        raise SettingsError("\n".join(problems))
    return dict(raw)


def clashes(members: Mapping[str, Settings]) -> list[str]:
    """One line per object name two members would both create (the names' rules:
    `member_names` and `components.settings.names`)."""
    owner: dict[str, str] = {}
    problems = []
    for name, settings in members.items():
        service = settings.service.name
        created = {
            "Service": service,
            "VirtualService": settings.istio.virtual_service_name,
            "DestinationRule": settings.istio.destination_rule_name,
            "precision check": precision_prefix(service),
        }
        for hw in HARDWARE:
            created[f"{hw} Deployment"] = settings.hardware(hw).deployment_name
            created[f"{hw} direct Service"] = direct_service_name(service, hw)
        for what, object_name in created.items():
            other = owner.setdefault(object_name, name)
            if other != name:
                problems.append(
                    f"{PROJECT}:{SERVICES_KEY}.{name}: its {what} {object_name!r} is also "
                    f"service {other}'s; give one of them other names"
                )
    return problems
