"""Evidence from outside the pull request: the image pairs whose precision check passed.

Stack config key `verifiedImages` is the verification history, a list of `{nvidia, ascend}`
image pairs, oldest first. `dualstack verify-precision` is its only writer: it appends the pair
it checked once the check passed (docs/trust-model.md). The judge reads it from the BASE,
never from the change under review, and lets an Ascend image serve traffic only when the pair
served is in that history, so rolling back to an earlier verified pair is always allowed.

`verifiedAscendImage` (one Ascend image, no NVIDIA image) is the older form of the same record;
it still counts, as an entry that names no NVIDIA image (`verified_facts`), with the NVIDIA
image the record's stack serves only: the policy pack's rule (`policies/supply_chain.py`, the
deployed image), which `pair_verified` (this stack's own record, the preview's lines) follows.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from components.settings.base import ConfigModel
from components.settings.images import pinned_image


class VerifiedPair(ConfigModel):
    """One image pair whose precision check passed (`dualstack verify-precision`)."""

    nvidia: str = Field(description="NVIDIA image the answers were compared with (the reference).")
    ascend: str = Field(description="Ascend image whose answers matched.")

    @field_validator("nvidia", "ascend")
    @classmethod
    def _pinned(cls, image: str) -> str:
        return pinned_image(image)

    def as_fact(self) -> dict[str, str]:
        """`{"nvidia": ..., "ascend": ...}`: the shape of policy config `verifiedImages`."""
        return {"nvidia": self.nvidia, "ascend": self.ascend}


def verified_facts(
    pairs: tuple[VerifiedPair, ...], legacy_ascend: str | None
) -> list[dict[str, str]]:
    """Policy config `verifiedImages`: every recorded pair, then the legacy
    `verifiedAscendImage` as `{"ascend": image}` (any NVIDIA image) unless a pair covers it."""
    facts = [pair.as_fact() for pair in pairs]
    if legacy_ascend and all(pair.ascend != legacy_ascend for pair in pairs):
        facts.append({"ascend": legacy_ascend})
    return facts


def pair_verified(
    facts: list[dict[str, str]], nvidia: str, ascend: str, deployed_nvidia: str | None
) -> bool:
    """True when `facts` record the images `nvidia` + `ascend` as verified, as the policy pack
    reads them (`policies/supply_chain.py`). `facts` are policy config `verifiedImages`
    entries (`verified_facts`): `{"nvidia": ..., "ascend": ...}` for a pair of
    `verifiedImages`, `{"ascend": ...}` alone for the older `verifiedAscendImage`. A pair
    matches when both its images are these; an entry without `nvidia` when its Ascend image is
    `ascend` and `nvidia` is `deployed_nvidia`, the NVIDIA image the record's stack serves (the
    base's, the pack's `previousImages.nvidia`; None, unknown: never)."""
    return any(
        fact.get("ascend") == ascend
        and nvidia == (deployed_nvidia if fact.get("nvidia") is None else fact["nvidia"])
        for fact in facts
    )
