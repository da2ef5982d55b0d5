"""`pack_config` of a single-service stack as the tests state it: its `Settings` and one
previous weight, given to `pack_config` the way the judge gives them (a fleet of one and
{service: weight})."""

from __future__ import annotations

from typing import Any

from components.settings import Fleet, Settings
from dualstack.offline.policy_config import pack_config


def single_pack_config(
    settings: Settings,
    previous_weight: int | None,
    base: Settings | None = None,
    base_objects: Any = None,
    envelope: Any = None,
    owner_approved: bool = False,
) -> dict[str, dict[str, Any]]:
    """`pack_config` for the stack whose one service is `settings`; `previous_weight` None is
    a first deploy (nothing deployed), `base` None no base."""
    return pack_config(
        Fleet.of(settings),
        {} if previous_weight is None else {settings.name: previous_weight},
        Fleet.of(base) if base is not None else None,
        base_objects,
        envelope,
        owner_approved,
    )
