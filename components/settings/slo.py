"""Service-level thresholds shared by the alerting rules and the promotion gate (key `slo`)."""

from pydantic import Field

from components.settings.base import ConfigModel
from components.settings.scalars import Int, Number


class SloSettings(ConfigModel):
    """When is Ascend "as good as" NVIDIA? One set of numbers for alerts and the gate."""

    error_ratio_margin: Number = Field(
        0.01,
        ge=0,
        le=1,
        description="Ascend's 5xx ratio may exceed NVIDIA's by at most this much "
        "(absolute ratio: 0.01 = 1 percentage point).",
    )
    p99_factor: Number = Field(
        1.5, ge=1, description="Ascend's p99 latency may be at most this multiple of NVIDIA's."
    )
    p99_slo_seconds: Number | None = Field(
        None,
        gt=0,
        description="Absolute p99 objective in seconds; Ascend under it passes regardless of "
        "the factor.",
    )
    min_requests: Int = Field(
        100, ge=1, description="Requests each backend must have served in the gate's window."
    )
    split_tolerance_points: float = Field(
        2.0,
        ge=0,
        le=100,
        description="The observed Ascend share of requests may differ from the configured "
        "one by max(this many points, splitToleranceRelative x the configured share).",
    )
    split_tolerance_relative: float = Field(
        0.25, ge=0, le=1, description="Relative part of the split tolerance (0.25 = 25%)."
    )
