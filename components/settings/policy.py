"""Settings of the policy pack's migration rules (stack config key `policy`).

`dualstack policy-config` and `dualstack preview` pass them to the pack as policy config; the
pack's own defaults (used when it runs with no config) equal these (a test keeps them in step).
"""

import re

from pydantic import Field, field_validator

from components.settings.base import ConfigModel
from components.settings.scalars import Int


class PolicySettings(ConfigModel):
    """How far one step may move the Ascend weight, and what counts as one release."""

    max_step: Int | None = Field(
        None,
        ge=1,
        le=100,
        description="If set, an increase of ascendWeight may be at most this many points, "
        "instead of going to the next ladder step (policy `no-unsafe-weight-jump`).",
    )
    release_tag_pattern: str = Field(
        r"^(?P<release>v?\d+\.\d+\.\d+)-(?P<flavor>[a-z0-9]+)$",
        description="Regular expression both image tags must match; its group `release` must "
        "be equal for nvidia and ascend (policy `image-pair-consistent`).",
    )

    @field_validator("release_tag_pattern")
    @classmethod
    def _has_release_group(cls, pattern: str) -> str:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if "release" not in compiled.groupindex:
            raise ValueError("needs a named group (?P<release>...)")
        return pattern
