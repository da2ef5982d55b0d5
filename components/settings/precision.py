"""Settings of the precision check (stack config key `precisionCheck`).

The comparison fields default to the checker's own defaults (`precision_check.
DEFAULTS`), so the in-cluster Job, `dualstack precision-check` and `dualstack
verify-precision` check the same thing unless a stack says otherwise.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from components.settings.base import ConfigModel, Quantity, check_requests_within_limits
from components.settings.images import parse_image
from components.settings.scalars import Bool, Int, Number
from precision_check import DEFAULTS, CheckError, Prompt, parse_prompts
from precision_check.options import COMPARISONS, MAX_TOP_K

# Five cron fields (minute hour day-of-month month day-of-week) or a @macro, as CronJob takes.
_CRON = r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|(\S+\s+){4}\S+)$"

JOB_IMAGE = "python:3.12.7-slim-bookworm"
"""The Job's default image: the Docker Hub `python` release 3.12.7 on Debian 12, one fixed
release (`3.12-slim` moves with every patch release). Debian-based, so uid 65534 is `nobody`."""

CHECK_FIELDS = {
    "mode": "mode",
    "min_match_rate": "min_match_rate",
    "prefix_length": "prefix_length",
    "prefix_unit": "prefix_unit",
    "tolerance": "logprob_tolerance",
    "top_k": "top_k",
    "baseline": "baseline",
    "baseline_margin": "baseline_margin",
    "accuracy_tolerance": "accuracy_tolerance",
    "endpoint": "endpoint",
    "model": "model",
    "max_tokens": "max_tokens",
    "seed": "seed",
    "concurrency": "concurrency",
    "timeout": "timeout_seconds",
    "retries": "retries",
    "deadline": "deadline_seconds",
}
"""Checker `Options` field -> the `PrecisionCheckSettings` attribute that sets it."""


class CheckResources(ConfigModel):
    """CPU and memory of the check's container (Kubernetes quantities): it only waits on
    HTTP, so 100m and 64Mi requests suffice."""

    cpu_request: Quantity = Field("100m", description="CPU request.")
    memory_request: Quantity = Field("64Mi", description="Memory request.")
    cpu_limit: Quantity = Field("500m", description="CPU limit.")
    memory_limit: Quantity = Field("256Mi", description="Memory limit.")

    @model_validator(mode="after")
    def _requests_within_limits(self) -> CheckResources:
        check_requests_within_limits(self)
        return self


class PromptSetting(ConfigModel):
    """One prompt of the stack's own set, with its reference answer for the accuracy mode."""

    id: str | None = Field(None, min_length=1, description="Name in reports; default p01, ...")
    prompt: str = Field(min_length=1, description="The completion prompt (or chat message).")
    answer: str | tuple[str, ...] | None = Field(
        None, description="accuracy mode: the exact answer, or a list of accepted answers."
    )

    def item(self) -> dict[str, Any]:
        """The checker's prompt item (`precision_check.parse_prompts` reads it)."""
        answer = list(self.answer) if isinstance(self.answer, tuple) else self.answer
        keys = {"id": self.id, "prompt": self.prompt, "answer": answer}
        return {key: value for key, value in keys.items() if value is not None}


PromptItem = Annotated[
    Annotated[str, Tag("text")] | Annotated[PromptSetting, Tag("item")],
    Discriminator(lambda value: "text" if isinstance(value, str) else "item"),
]
"""One stack prompt: a text, or a mapping {id, prompt, answer} (errors name only the form
given)."""


class PrecisionCheckSettings(ConfigModel):
    """How the precision check compares both backends, and how its Job runs."""

    enabled: Bool = Field(True, description="Render the precision-check ConfigMap and Job.")
    mode: Literal["exact", "prefix", "logprobs", "topk", "accuracy"] = Field(
        DEFAULTS["mode"],
        description="Comparison: identical text, prefix, logprobs, top-k closeness (vLLM's "
        "rule), or accuracy against reference answers.",
    )
    min_match_rate: Number = Field(
        DEFAULTS["min_match_rate"],
        gt=0,
        le=100,
        description="% of prompts that must match; above 0, or a check passes with no match.",
    )
    prefix_length: Int = Field(
        DEFAULTS["prefix_length"], ge=1, description="prefix mode: leading units that must agree."
    )
    prefix_unit: Literal["chars", "tokens"] = Field(
        DEFAULTS["prefix_unit"], description="prefix mode: characters or backend tokens."
    )
    logprob_tolerance: Number = Field(
        DEFAULTS["tolerance"], gt=0, description="logprobs mode: largest absolute difference."
    )
    top_k: Int = Field(
        DEFAULTS["top_k"],
        ge=1,
        le=MAX_TOP_K,
        description="topk mode: a differing token must be among the other side's k likeliest.",
    )
    baseline: Bool = Field(
        DEFAULTS["baseline"],
        description="Send each prompt twice to each backend and judge the cross-hardware "
        "agreement against the same-hardware one (comparison modes).",
    )
    baseline_margin: Number = Field(
        DEFAULTS["baseline_margin"],
        ge=0,
        le=100,
        description="baseline: points cross agreement may fall below the weaker same-hardware.",
    )
    accuracy_tolerance: Number = Field(
        DEFAULTS["accuracy_tolerance"],
        gt=0,
        lt=100,
        description="accuracy mode: points Ascend may be below NVIDIA (95 % confidence).",
    )
    endpoint: Literal["completions", "chat"] = Field(
        DEFAULTS["endpoint"], description="OpenAI API: /v1/completions or /v1/chat/completions."
    )
    model: str | None = Field(DEFAULTS["model"], description="`model` field of each request.")
    max_tokens: Int = Field(
        DEFAULTS["max_tokens"], ge=1, le=4096, description="Tokens generated per prompt."
    )
    seed: Int | None = Field(DEFAULTS["seed"], description="`seed` of each request; null: none.")
    concurrency: Int = Field(
        DEFAULTS["concurrency"], ge=1, le=64, description="Requests in flight per backend."
    )
    timeout_seconds: Number = Field(
        DEFAULTS["timeout"], gt=0, description="Seconds to wait for one answer."
    )
    retries: Int = Field(
        DEFAULTS["retries"], ge=0, le=10, description="Retries on connect errors, HTTP 5xx/429."
    )
    deadline_seconds: Number = Field(
        DEFAULTS["deadline"], gt=0, description="Seconds for the whole check."
    )
    prompts: tuple[PromptItem, ...] | None = Field(
        None,
        min_length=1,
        description="Prompts to check (all different): texts, or {id, prompt, answer}; null: "
        "the mode's built-in set.",
    )
    image: str = Field(
        JOB_IMAGE,
        min_length=1,
        description="Image of the Job (stdlib Python 3.11+), pinned by release tag or digest.",
    )
    backoff_limit: Int = Field(
        2, ge=0, le=10, description="Job retries of a pod that could not complete (exit 2)."
    )
    active_deadline_seconds: Int = Field(
        900, ge=1, description="Seconds before Kubernetes stops the Job; above deadlineSeconds."
    )
    ttl_seconds_after_finished: Int = Field(
        86400, ge=0, description="Seconds a finished Job (and its logs) is kept."
    )
    schedule: str | None = Field(
        None, description="Cron schedule of a periodic re-check (a CronJob); null: none."
    )
    pushgateway_url: Annotated[str, Field(pattern=r"^https?://[^/\s]+")] | None = Field(
        None, description="Pushgateway the Job pushes precision_check_* metrics to."
    )
    istio_sidecar: Bool = Field(
        False,
        description="Let Istio inject a sidecar into the check's pod (needs native sidecars, "
        "or the Job never completes).",
    )
    resources: CheckResources = Field(default_factory=CheckResources)

    @field_validator("prompts")
    @classmethod
    def _prompts_differ(
        cls, prompts: tuple[str | PromptSetting, ...] | None
    ) -> tuple[str | PromptSetting, ...] | None:
        if prompts is not None:
            try:
                parse_prompts(_items(prompts), "prompts")
            except CheckError as exc:
                raise ValueError(str(exc)) from None
        return prompts

    @field_validator("image")
    @classmethod
    def _image_is_pinned(cls, image: str) -> str:
        _repository, tag, digest = parse_image(image)
        if digest is None and tag in (None, "latest"):
            raise ValueError(
                f"{'the moving tag latest' if tag else 'no tag or digest'}; pin a release tag "
                f"or a digest, e.g. {JOB_IMAGE}"
            )
        return image

    @field_validator("schedule")
    @classmethod
    def _cron(cls, schedule: str | None) -> str | None:
        if schedule is not None and not re.match(_CRON, schedule.strip()):
            raise ValueError("expected five cron fields, e.g. '0 3 * * *', or a macro like @daily")
        return schedule

    @model_validator(mode="after")
    def _mode_fits(self) -> PrecisionCheckSettings:
        if self.baseline and self.mode not in COMPARISONS:
            raise ValueError(
                f"baseline: true with mode {self.mode!r}: the baseline repeats a comparison, "
                f"one of {', '.join(COMPARISONS)}"
            )
        unanswered = [
            i for i, p in enumerate(self.prompts or (), 1) if getattr(p, "answer", None) is None
        ]
        if self.mode == "accuracy" and unanswered:
            raise ValueError(
                f"mode 'accuracy' needs an answer on every prompt; prompts item {unanswered[0]} "
                "has none (give {prompt, answer}, or drop prompts for the built-in set)"
            )
        return self

    @model_validator(mode="after")
    def _job_outlives_check(self) -> PrecisionCheckSettings:
        if self.active_deadline_seconds <= self.deadline_seconds:
            raise ValueError(
                f"activeDeadlineSeconds ({self.active_deadline_seconds}) must exceed "
                f"deadlineSeconds ({self.deadline_seconds:g}), or Kubernetes kills the check "
                "before it can report"
            )
        return self

    def check_fields(self) -> dict[str, Any]:
        """The comparison settings as `precision_check.Options` fields."""
        return {field: getattr(self, attribute) for field, attribute in CHECK_FIELDS.items()}

    @classmethod
    def check_keys(cls) -> dict[str, str]:
        """The stack config key under `precisionCheck` that sets each checker field, prompts
        included: `{"timeout": "timeoutSeconds", "prompts": "prompts", ...}`."""
        fields = {**CHECK_FIELDS, "prompts": "prompts"}
        return {field: cls.model_fields[attribute].alias for field, attribute in fields.items()}

    def prompt_list(self) -> list[Prompt] | None:
        """The stack's prompts as checker prompts (`p01`, `p02`, ...); None: built-in set."""
        return None if self.prompts is None else parse_prompts(_items(self.prompts), "prompts")


def _items(prompts: tuple[str | PromptSetting, ...]) -> list[str | dict[str, Any]]:
    """The stack's prompts as the checker's items: texts stay texts."""
    return [p if isinstance(p, str) else p.item() for p in prompts]
