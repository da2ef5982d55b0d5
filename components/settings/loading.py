"""Loading a stack's settings: from the config Pulumi hands a program to a validated `Fleet`.

`load_fleet()` and `load_settings()` are the entry points (the program, the CLI, the judge).
`config` maps full keys (`dualstack-inference:ascendWeight`) to values: strings as `pulumi
config set` stores them, JSON text for structured keys, or already-decoded YAML values; keys of
other namespaces (`kubernetes:context`, `pulumi:...`) are ignored. The model
(`components.settings.model.Settings`) validates; this module renders pydantic's errors as
`SettingsError`, one line per problem, naming the full key, the value seen and what is
allowed (`dualstack-inference:ascendWeight = '150': Input should be less than or equal to
100`), and says where a key of this project stands under another namespace. The rules of a
fleet (what a member may set, what it inherits) are `components.settings.fleet`'s.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from components.settings.base import deep_merge
from components.settings.fleet import (
    MEMBER_ONLY,
    SERVICES_KEY,
    Fleet,
    clashes,
    declared_services,
    layout_problems,
    member_names,
)
from components.settings.model import PROJECT, Settings, SettingsError
from components.settings.scalars import kind_of, shown


def _decode(value: Any) -> Any:
    """Pulumi hands structured config values to programs as JSON text; decode those."""
    if isinstance(value, str) and value[:1] and value[0] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


_EXPECTED = {
    "tuple_type": "a list (a YAML sequence)",
    "list_type": "a list (a YAML sequence)",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "string_type": "a string",
}
"""Pydantic error types that mean "wrong kind of value" -> what the key takes."""


def _innermost(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Errors whose key holds no other error: a list with one bad item says only that, not
    also "should have at least 1 item after validation" about the list."""
    locs = [tuple(e["loc"]) for e in errors]
    return [
        e
        for e, loc in zip(errors, locs, strict=True)
        if not any(len(other) > len(loc) and other[: len(loc)] == loc for other in locs)
    ]


def _describe(error: dict[str, Any], hints: Mapping[str, str]) -> str:
    """One line for one pydantic error: the full key, the value (cut to 200 characters) and
    what is allowed. `hints` maps a top-level key to a note for a missing key."""
    path = ".".join(str(part) for part in error["loc"])
    key = f"{PROJECT}:{path}" if path else PROJECT
    message = error["msg"].removeprefix("Value error, ")
    value = error.get("input")
    if error["type"] in _EXPECTED:
        message = f"expected {_EXPECTED[error['type']]}, got {kind_of(value)}"
    if error["type"] == "missing":
        flag = "--path " if "." in path else ""
        hint = hints.get(path, "")
        return f"{key}: missing; set it with `pulumi config set {flag}{path} <value>`{hint}"
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(str(error["loc"][-1]), _keys_beside(error["loc"]), 1)
        spelling = f"did you mean {close[0]}?" if close else "check its spelling"
        return f"{key}: unknown key (value {shown(value)}); {spelling}"
    if error["type"] == "too_short":
        least = error.get("ctx", {}).get("min_length", 1)
        message = f"expected at least {least} item{'s' if least != 1 else ''}"
    if error["loc"] and "input" in error and not isinstance(value, dict):
        return f"{key} = {shown(value)}: {message}"
    return f"{key}: {message}"


def _keys_beside(loc: tuple[Any, ...]) -> list[str]:
    """The keys the model holding `loc`'s last part accepts (for "did you mean")."""
    model: type[BaseModel] = Settings
    if loc[:1] == (SERVICES_KEY,):  # a fleet member's key: services.<name>.<key>
        loc = loc[2:]
    for part in loc[:-1]:
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return [field.alias or name for name, field in model.model_fields.items()]


def _foreign_hints(config: Mapping[str, Any], prefix: str) -> dict[str, str]:
    """For each key of this project found only under another namespace (`other:ascendWeight`),
    the note a "missing" line gets: the project's namespace comes from Pulumi.yaml `name`."""
    known = {field.alias or name for name, field in Settings.model_fields.items()} | {SERVICES_KEY}
    hints: dict[str, list[str]] = {}
    for full in config:
        namespace, colon, key = str(full).partition(":")
        if colon and f"{namespace}:" != prefix and key in known:
            hints.setdefault(key, []).append(f"{namespace}:{key}")
    return {
        key: f" (found {', '.join(found)}: keys of this project go under `{prefix}`)"
        for key, found in hints.items()
    }


def raw_config(config: Mapping[str, Any], project: str = PROJECT) -> dict[str, Any]:
    """The project's keys of a stack config, without their namespace, JSON text decoded.

    Raises SettingsError for an encrypted (`secure:`) value: no setting here is secret.
    """
    prefix = f"{project}:"
    raw = {k.removeprefix(prefix): _decode(v) for k, v in config.items() if k.startswith(prefix)}
    secrets = sorted(k for k, v in raw.items() if isinstance(v, dict) and set(v) == {"secure"})
    if secrets:
        raise SettingsError(
            "\n".join(
                f"{prefix}{k}: is an encrypted `secure:` value; no setting of this project is "
                "secret, so store it in plain text (`pulumi config set` without --secret)"
                for k in secrets
            )
        )
    return raw


def validate_settings(
    raw: Mapping[str, Any],
    config: Mapping[str, Any],
    project: str = PROJECT,
    member: str | None = None,
) -> Settings:
    """`Settings` from the project's keys `raw` (see `raw_config`); `config` is the whole
    stack config (for the "found under another namespace" hints). `member` is the fleet
    member's name: the messages put `services.<member>.` before each key, and it becomes the
    model's `member` (passed as validation context: the model is frozen, and the name is no
    config key).

    Raises SettingsError with one line per problem.
    """
    try:
        return Settings.model_validate(dict(raw), context={"member": member})
    except ValidationError as exc:
        hints = _foreign_hints(config, f"{project}:")
        where = (SERVICES_KEY, member) if member is not None else ()
        errors = [{**e, "loc": (*where, *e["loc"])} for e in _innermost(exc.errors())]
        raise SettingsError("\n".join(_describe(e, hints) for e in errors)) from None


def load_fleet(config: Mapping[str, Any], project: str = PROJECT) -> Fleet:
    """Validate a stack's config into its `Fleet` (the shape: `components.settings.fleet`).

    Without `services`, the stack's keys are its one implicit member. With `services`, the
    stack's own keys are validated once, then every member as a full `Settings` (the stack's
    keys, the names `member_names` gives, the member's keys laid over them; `Settings.member`
    is its name), then what only the fleet can see: no two members share an object name.

    Raises SettingsError, one line per problem, naming the full key
    (`dualstack-inference:services.chat.ascendWeight`).
    """
    raw = raw_config(config, project)
    if SERVICES_KEY not in raw:
        settings = validate_settings(raw, config, project)
        return Fleet({settings.name: settings}, declared=False)
    services = declared_services(raw.pop(SERVICES_KEY))
    if problems := layout_problems(raw, services):
        raise SettingsError("\n".join(problems))
    shared = {k: v for k, v in raw.items() if k not in MEMBER_ONLY}
    validate_settings({**shared, "ascendWeight": 0}, config, project)  # the stack's own keys
    members: dict[str, Settings] = {}
    lines: list[str] = []
    for name, member in services.items():
        merged = deep_merge(deep_merge(shared, member_names(name)), dict(member))
        try:
            members[name] = validate_settings(merged, config, project, member=name)
        except SettingsError as exc:
            lines.append(str(exc))
    if lines:
        raise SettingsError("\n".join(lines))
    if problems := clashes(members):
        raise SettingsError("\n".join(problems))
    return Fleet(members, declared=True)


def load_settings(
    config: Mapping[str, Any], project: str = PROJECT, service: str | None = None
) -> Settings:
    """The settings of one service of the stack: `service`, or the only one.

    Raises SettingsError for a bad config, an unknown `service`, or no `service` while the
    stack holds several (the message lists them).
    """
    return load_fleet(config, project).member(service)


def config_with_weights(
    config: Mapping[str, Any], weights: Mapping[str, int], project: str = PROJECT
) -> dict[str, Any]:
    """`config` with some services' weights replaced, {service name: weight in %}: the stack's
    `ascendWeight` for the single implicit service (its name is `service.name`), else
    `services.<name>.ascendWeight` (as `pulumi config set` / `--path` store them). A name the
    stack does not hold is a SettingsError. `config` itself is not changed."""
    raw = raw_config(config, project)
    result = dict(config)
    if SERVICES_KEY not in raw:
        (name,) = load_fleet(config, project).names
        for key, weight in weights.items():
            if key != name:
                raise SettingsError(
                    f"--service {shown(key)}: no such service; this stack holds {name}"
                )
            result[f"{project}:ascendWeight"] = str(weight)
        return result
    services = {name: dict(member) for name, member in declared_services(raw[SERVICES_KEY]).items()}
    for key, weight in weights.items():
        if key not in services:
            listed = ", ".join(services)
            raise SettingsError(
                f"--service {shown(key)}: no such service; this stack holds {listed}"
            )
        services[key]["ascendWeight"] = weight
    result[f"{project}:{SERVICES_KEY}"] = services
    return result
