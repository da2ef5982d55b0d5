"""The base class every settings model shares: frozen, closed, camelCase keys, merged defaults."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel


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
