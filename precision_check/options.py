"""What one run of the check is told: `Options`, their defaults, and the error type."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

from .servers import same_server, server_of

EXIT_PASS, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2
HARDWARE = ("nvidia", "ascend")
MODES = ("exact", "prefix", "logprobs", "topk", "accuracy")
COMPARISONS = MODES[:4]
"""The modes that compare the two backends' answers with each other (`accuracy` scores each
against reference answers instead)."""
MAX_TOP_K = 20
"""The largest `--top-k`: vLLM's default `--max-logprobs` and OpenAI's chat `top_logprobs`
limit."""
PREFIX_UNITS = ("chars", "tokens")
ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
"""OpenAI-compatible paths (platform.openai.com/docs/api-reference; vLLM and MindIE serve
both)."""
METRIC_LABELS = ("job", "ascend_image", "nvidia_image", "mode", "hardware")
"""Labels the pushed series carry themselves; grouping labels must not reuse them."""
FLAGS = {"json_report": "--json", "markdown_report": "--markdown", "push_labels": "--push-label"}
"""Flags whose name is not `--` + the field name with dashes."""


class CheckError(Exception):
    """The check could not complete; `str()` is the one-line cause."""


def flag(name: str) -> str:
    """The command-line flag of an `Options` field: `max_tokens` -> `--max-tokens`."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


@dataclass(frozen=True)
class Options:
    """Everything one run needs; each field is the command-line flag `flag(name)`.

    Units: `min_match_rate` in % (above 0), `timeout`, `backoff` and `deadline` in seconds,
    `tolerance` in natural-log units (absolute difference of two log-probabilities),
    `baseline_margin` and `accuracy_tolerance` in percentage points. `concurrency` is the
    number of requests in flight on EACH backend. `baseline` sends every prompt twice to each
    backend (comparison modes only). Raises CheckError naming the flag when a value is out of
    range, and when `nvidia` and `ascend` reach the same server (`servers.same_server`).
    """

    nvidia: str
    ascend: str
    prompts: str | None = None
    endpoint: str = "completions"
    model: str | None = None
    max_tokens: int = 64
    seed: int | None = 0
    mode: str = "exact"
    min_match_rate: float = 100.0
    prefix_length: int = 32
    prefix_unit: str = "chars"
    tolerance: float = 0.01
    top_k: int = 5
    baseline: bool = False
    baseline_margin: float = 5.0
    accuracy_tolerance: float = 5.0
    concurrency: int = 8
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 0.5
    deadline: float = 600.0
    json_report: str | None = None
    markdown_report: str | None = None
    pushgateway: str | None = None
    push_job: str = "precision_check"
    push_labels: tuple[str, ...] = ()
    nvidia_image: str | None = None
    ascend_image: str | None = None
    api_key_env: str | None = None

    def __post_init__(self) -> None:
        for name in ("nvidia", "ascend", "pushgateway"):
            url = getattr(self, name)
            if url is not None and server_of(url) is None:
                raise CheckError(
                    f"--{name} {url!r}: expected an http(s) URL, e.g. http://host:8000"
                )
        if same_server(self.nvidia, self.ascend):
            raise CheckError(
                f"--nvidia and --ascend are the same server ({server_of(self.nvidia)}): "
                "a backend compared with itself always matches"
            )
        choices = {"endpoint": tuple(ENDPOINTS), "mode": MODES, "prefix_unit": PREFIX_UNITS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise CheckError(f"{flag(name)} {getattr(self, name)!r}: one of {allowed}")
        for name in ("max_tokens", "prefix_length", "concurrency"):
            if getattr(self, name) < 1:
                raise CheckError(f"{flag(name)} {getattr(self, name)}: must be at least 1")
        if not 1 <= self.top_k <= MAX_TOP_K:
            raise CheckError(
                f"--top-k {self.top_k}: must be 1 to {MAX_TOP_K} (servers return at most "
                f"{MAX_TOP_K} alternatives per token)"
            )
        if not 0 <= self.baseline_margin <= 100:
            raise CheckError(
                f"--baseline-margin {self.baseline_margin:g}: must be 0 to 100 (points)"
            )
        if not 0 < self.accuracy_tolerance < 100:
            raise CheckError(
                f"--accuracy-tolerance {self.accuracy_tolerance:g}: must be above 0 and below "
                "100 (points)"
            )
        if self.baseline and self.mode not in COMPARISONS:
            raise CheckError(
                f"--baseline with --mode {self.mode}: the baseline repeats a comparison; one of "
                f"{COMPARISONS}"
            )
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise CheckError(f"{flag(f.name)} {value}: must be a finite number")
        for name in ("timeout", "deadline", "tolerance"):
            if not getattr(self, name) > 0:
                raise CheckError(f"{flag(name)} {getattr(self, name)}: must be above 0")
        for name in ("retries", "backoff"):
            if getattr(self, name) < 0:
                raise CheckError(f"{flag(name)} {getattr(self, name)}: must not be negative")
        if not 0 < self.min_match_rate <= 100:
            raise CheckError(
                f"--min-match-rate {self.min_match_rate:g}: must be above 0 and at most 100 (%); "
                "a check that needs no match passes whatever the answers"
            )
        for label in self.push_labels:
            key, sep, value = label.partition("=")
            if not sep or not key.isidentifier() or not value or key in METRIC_LABELS:
                raise CheckError(
                    f"--push-label {label!r}: expected KEY=VALUE with KEY not one of "
                    f"{', '.join(METRIC_LABELS)}"
                )
        if self.pushgateway and not self.ascend_image:
            raise CheckError("--pushgateway needs --ascend-image: the gate reads results by it")
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise CheckError(f"--api-key-env {self.api_key_env}: that variable is not set")

    @property
    def wants_tokens(self) -> bool:
        """True when the comparison needs the backends' tokens (`logprobs` is requested)."""
        tokens = self.mode == "prefix" and self.prefix_unit == "tokens"
        return tokens or self.mode in ("logprobs", "topk")

    @property
    def wants_top(self) -> bool:
        """True when the comparison needs each token's `top_k` most likely alternatives."""
        return self.mode == "topk"

    @property
    def runs(self) -> int:
        """How many times each backend is asked each prompt: 2 with `baseline`, else 1."""
        return 2 if self.baseline else 1


DEFAULTS = {
    f.name: f.default for f in dataclasses.fields(Options) if f.default is not dataclasses.MISSING
}
"""Default of every optional field, by field name (the stack's settings model reuses them)."""
