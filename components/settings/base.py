"""The base class every settings model shares: frozen, closed, camelCase keys, merged defaults."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, model_validator
from pydantic.alias_generators import to_camel

from components.api_rules import label_errors, parse_quantity
from components.settings.scalars import shown


def api_rule(check: Callable[[Any], str | None]) -> AfterValidator:
    """A validator from a `components.api_rules` checker: the field's value must pass it.

    Example: `Annotated[str, api_rule(dns1123_subdomain)]`; the message is the checker's
    (`must be lowercase letters, digits, ...`).
    """

    def validate(value: Any) -> Any:
        if why := check(value):
            raise ValueError(why)
        return value

    return AfterValidator(validate)


def _quantity_error(value: Any) -> str | None:
    try:
        amount = parse_quantity(value)
    except ValueError as exc:
        return str(exc)
    return "must be at least 0" if amount < 0 else None


def _quantity_text(value: Any) -> Any:
    # `pulumi config set --path nvidia.resources.cpuRequest 4` stores the number 4; the API
    # takes a whole number as a quantity too. Booleans and fractions stay refused.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


Quantity = Annotated[str, BeforeValidator(_quantity_text), api_rule(_quantity_error)]
"""A Kubernetes quantity (`500m`, `4`, `32Gi`; the grammar of quantity.go), at least 0; a
YAML integer is taken as its digits."""


def label_map(reserved: frozenset[str] = frozenset()) -> AfterValidator:
    """A validator for a mapping of Kubernetes labels: every key a qualified name, every value
    a label value (api_rules.label_errors), no key in `reserved` (set by the program)."""

    def validate(labels: dict[str, str]) -> dict[str, str]:
        taken = sorted(reserved & set(labels))
        if taken:
            raise ValueError(f"label {taken[0]!r} is set by the program; choose another key")
        problems = label_errors(labels)
        if problems:
            key, why = problems[0]
            raise ValueError(f"{shown(key, 80)}: {why}")
        return labels

    return AfterValidator(validate)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` laid over `base`: mappings merge key by key, anything else replaces.

    Example: deep_merge({"pool": {"name": "ascend", "nodes": ["a"]}}, {"pool": {"nodes": ["b"]}})
    -> {"pool": {"name": "ascend", "nodes": ["b"]}}.
    """
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class ConfigModel(BaseModel):
    """A frozen settings model whose keys are the camelCase names used in `Pulumi.<stack>.yaml`.

    Unknown keys are rejected (`extra="forbid"`), so a misspelt key fails the run instead of
    being silently ignored. A structured key given in part is merged onto that field's
    default (mappings merge, lists replace), so `ascend: {pool: {nodes: [...]}}` keeps the
    Ascend pool's name and labels. Python code uses the snake_case attribute names.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _merge_onto_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        merged = dict(data)
        for name, field in cls.model_fields.items():
            key = field.alias if field.alias in data else name
            value = data.get(key)
            if not isinstance(value, dict) or field.is_required():
                continue
            default = field.get_default(call_default_factory=True)
            if isinstance(default, BaseModel):
                merged[key] = deep_merge(default.model_dump(by_alias=True), value)
        return merged


def check_requests_within_limits(resources: Any) -> None:
    """Refuse a CPU or memory request above its limit, as the API server does
    (ValidateResourceRequirements: "must be less than or equal to cpu limit").

    `resources` has `cpu_request`, `cpu_limit`, `memory_request`, `memory_limit` (valid
    quantities). Raises ValueError naming both keys and values.
    """
    for kind in ("cpu", "memory"):
        request, limit = getattr(resources, f"{kind}_request"), getattr(resources, f"{kind}_limit")
        if parse_quantity(request) > parse_quantity(limit):
            raise ValueError(
                f"{kind}Request {request} is above {kind}Limit {limit}; a request must be at "
                "most its limit"
            )
