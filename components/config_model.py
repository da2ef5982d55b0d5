"""The base class every settings model shares: frozen, closed, camelCase keys."""

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ConfigModel(BaseModel):
    """A frozen settings model whose keys are the camelCase names used in `Pulumi.<stack>.yaml`.

    Unknown keys are rejected (`extra="forbid"`), so a misspelt key fails the run instead of
    being silently ignored. Python code uses the snake_case attribute names.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
    )
