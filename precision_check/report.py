"""The outcome of one run (`Report`): what matched, what differed, the baseline, the accuracy,
the verdict and its reasons, and the JSON report."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .accuracy import Accuracy
from .options import EXIT_ERROR, EXIT_MISMATCH, EXIT_PASS, HARDWARE, Options


@dataclass(frozen=True)
class Mismatch:
    """One prompt answered differently by the two backends: the first differing position
    (`unit` is `char`, `token` or `answer`), the text around it from both backends, why it
    counts as different, and the run (1, or 2 with the baseline) it came from."""

    prompt_id: str
    prompt: str
    position: int
    unit: str
    nvidia: str
    ascend: str
    detail: str
    run: int = 1


@dataclass(frozen=True)
class Repeat:
    """One prompt a backend answered differently the second time (baseline)."""

    prompt_id: str
    prompt: str
    hardware: str
    position: int
    unit: str
    first: str
    second: str
    detail: str


@dataclass
class Baseline:
    """Same-hardware agreement: per backend, prompts answered alike twice (`agreed`) out of
    prompts answered twice (`compared`), and the differing repeats."""

    margin: float
    agreed: dict[str, int] = field(default_factory=dict)
    compared: dict[str, int] = field(default_factory=dict)
    repeats: list[Repeat] = field(default_factory=list)

    def rate(self, hardware: str) -> float:
        """Within-`hardware` agreement in % (0 when nothing was compared: never a pass)."""
        compared = self.compared.get(hardware, 0)
        return 100.0 * self.agreed.get(hardware, 0) / compared if compared else 0.0

    @property
    def weaker(self) -> str:
        """The backend that agrees less with itself (`nvidia` on a tie)."""
        return min(HARDWARE, key=self.rate)


@dataclass
class Report:
    """The outcome of one run. `compared` counts answer pairs (one per prompt and run) both
    backends gave; `answered` and `retries` are per backend. `divergences` are differences
    the mode tolerates (`topk`: within the top-k)."""

    options: Options
    prompts: int
    compared: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    duration: float = 0.0
    answered: dict[str, int] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    divergences: list[Mismatch] = field(default_factory=list)
    baseline: Baseline | None = None
    accuracy: Accuracy | None = None

    @property
    def pairs(self) -> int:
        """Answer pairs the run meant to compare: prompts x runs."""
        return self.prompts * self.options.runs

    @property
    def matched(self) -> int:
        """Answer pairs both backends answered alike."""
        return self.compared - len(self.mismatches)

    @property
    def match_rate(self) -> float:
        """Matched / all pairs, in %: an unanswered prompt never counts as a match."""
        return 100.0 * self.matched / self.pairs if self.pairs else 0.0

    @property
    def reasons(self) -> list[str]:
        """Why the run did not pass, one sentence each; empty for a pass. Errors are not
        repeated here."""
        if self.errors or not self.compared:
            return []
        if self.accuracy is not None:
            return [] if self.accuracy.verdict == "pass" else [self.accuracy.reason]
        need = self.options.min_match_rate
        reasons = []
        if self.matched * 100 < need * self.pairs - 1e-9:
            reasons.append(f"match rate {self.match_rate:.1f} % is below {need:g} %")
        if not self.matched:
            reasons.append("no answer pair matched")
        if self.baseline is not None:
            reasons += self._baseline_reasons(self.baseline)
        return reasons

    def _baseline_reasons(self, baseline: Baseline) -> list[str]:
        need, reasons = self.options.min_match_rate, []
        for hw in HARDWARE:
            agreed, compared = baseline.agreed.get(hw, 0), baseline.compared.get(hw, 0)
            if not compared or agreed * 100 < need * compared - 1e-9:
                reasons.append(
                    f"{hw} agrees with itself on {baseline.rate(hw):.1f} % of prompts, below "
                    f"{need:g} %: it does not repeat its answers at temperature 0"
                )
        weaker = baseline.weaker
        gap = baseline.rate(weaker) - self.match_rate
        if gap > baseline.margin + 1e-9:
            reasons.append(
                f"cross-hardware agreement {self.match_rate:.1f} % is {gap:.1f} points below "
                f"the weaker same-hardware agreement ({weaker} {baseline.rate(weaker):.1f} %), "
                f"more than the margin of {baseline.margin:g}"
            )
        return reasons

    @property
    def exit_code(self) -> int:
        """2 on any error or when no pair was compared (an error is never a pass), else 1
        when there is any reason not to pass (inconclusive included), else 0."""
        if self.errors or not self.prompts or not self.compared:
            return EXIT_ERROR
        return EXIT_MISMATCH if self.reasons else EXIT_PASS

    @property
    def status(self) -> str:
        """`pass`, `mismatch`, `inconclusive` (accuracy mode, too few items) or `error`."""
        if self.exit_code == EXIT_MISMATCH and self.inconclusive:
            return "inconclusive"
        return ("pass", "mismatch", "error")[self.exit_code]

    @property
    def inconclusive(self) -> bool:
        """True when the accuracy mode could not tell (exit 1, never a pass)."""
        return bool(self.accuracy and self.accuracy.verdict == "inconclusive")

    def to_json(self) -> dict[str, Any]:
        """The JSON report (`--json FILE`); rates in %, durations in seconds."""
        options = self.options
        backends = {
            hw: {
                "url": getattr(options, hw),
                "image": getattr(options, f"{hw}_image"),
                "answered": self.answered.get(hw, 0),
                "retries": self.retries.get(hw, 0),
            }
            for hw in HARDWARE
        }
        report: dict[str, Any] = {
            "status": self.status,
            "passed": self.exit_code == EXIT_PASS,
            "mode": options.mode,
            "matchRate": round(self.match_rate, 3),
            "minMatchRate": options.min_match_rate,
            "prompts": self.prompts,
            "runs": options.runs,
            "compared": self.compared,
            "matched": self.matched,
            "durationSeconds": round(self.duration, 3),
            "reasons": self.reasons,
            "errors": self.errors,
            "mismatches": [dataclasses.asdict(m) for m in self.mismatches],
            "backends": backends,
        }
        if options.mode == "topk":
            report["topK"] = options.top_k
            report["divergences"] = [dataclasses.asdict(m) for m in self.divergences]
        if self.baseline is not None:
            report["baseline"] = {
                "marginPoints": self.baseline.margin,
                "withinMatchRate": {hw: round(self.baseline.rate(hw), 3) for hw in HARDWARE},
                "crossMatchRate": round(self.match_rate, 3),
                "repeats": [dataclasses.asdict(r) for r in self.baseline.repeats],
            }
        if self.accuracy is not None:
            report["accuracy"] = self.accuracy.to_json()
        return report
