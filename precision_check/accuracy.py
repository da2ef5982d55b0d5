"""The accuracy mode: score each backend's answers against reference answers, and tell with
95 % confidence whether Ascend is below NVIDIA by more than a tolerance.

Statistics (both backends answer the same items, so the data are paired):

- each backend's accuracy with its Wilson score interval (Wilson 1927; Newcombe 1998,
  "Two-sided confidence intervals for the single proportion", Stat Med 17:857);
- the difference Ascend - NVIDIA with Newcombe's square-and-add interval for paired
  proportions, built from the two Wilson intervals and their correlation (Newcombe 1998,
  "Improved confidence intervals for the difference between binomial proportions based on
  paired data", Stat Med 17:2635, method 10; as in Fagerland, Lydersen and Laake 2017,
  "Statistical Analysis of Contingency Tables", ch. 8).

Verdict with tolerance t points: `fail` when the whole interval lies below -t (Ascend is
worse by more than t, with confidence), `pass` when it lies at or above -t, else
`inconclusive` (too few items to tell; never a pass). When NVIDIA answers no item right the
items do not measure the model, which is `inconclusive` too.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

Z95 = NormalDist().inv_cdf(0.975)
"""The two-sided 95 % normal quantile, 1.95996..."""
EDGES = " \t\"'`*_.,;:!?()[]{}。，！？：；「」“”‘’"
"""Characters stripped from both ends of an answer line before it is compared."""
LEADS = ("answer:", "a:")


def normalise(text: str) -> str:
    """The comparable form of an answer: NFKC, case-folded, its first non-empty line, an
    `Answer:` lead, surrounding quotes, emphasis and punctuation removed, thousands commas
    dropped from numbers, runs of whitespace as one space. `" **1,234.**\\nQ: ..."` ->
    `"1234"`."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    line = next((part for part in folded.splitlines() if part.strip()), "").strip()
    for lead in LEADS:
        line = line.removeprefix(lead).strip()
    line = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", line.strip(EDGES))
    return " ".join(line.split())


def is_correct(text: str, answers: Iterable[str]) -> bool:
    """True when `text`, normalised, equals one of the reference `answers`, normalised."""
    return normalise(text) in {normalise(answer) for answer in answers}


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval (lower, upper) of a proportion, 0..1; (0, 1) for n = 0.
    81/263 -> (0.2553, 0.3662) (Newcombe 1998, table II)."""
    if n == 0:
        return 0.0, 1.0
    p, z2 = successes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_difference(a: int, b: int, c: int, d: int, z: float = Z95) -> tuple[float, float]:
    """Newcombe's interval (lower, upper) of p1 - p2 for paired proportions, -1..1: `a` both
    right, `b` only the second right, `c` only the first right, `d` neither, so p1 = (a+c)/n
    and p2 = (a+b)/n. The table 59, 6 / 16, 80 of Fagerland et al. (a, c / b, d) gives
    (-0.1186, -0.0046)."""
    n = a + b + c + d
    if n == 0:
        return -1.0, 1.0
    p1, p2 = (a + c) / n, (a + b) / n
    l1, u1 = wilson(a + c, n, z)
    l2, u2 = wilson(a + b, n, z)
    margins = (a + c) * (b + d) * (a + b) * (c + d)
    product = a * d - b * c
    if margins == 0 or 0 <= product <= n / 2:
        phi = 0.0
    else:  # the continuity-adjusted correlation: positive values reduced by n/2
        phi = (product - n / 2 if product > 0 else product) / math.sqrt(margins)
    lower = math.sqrt(max(0.0, (p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)))
    upper = math.sqrt(max(0.0, (u1 - p1) ** 2 + (p2 - l2) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2)))
    return max(-1.0, p1 - p2 - lower), min(1.0, p1 - p2 + upper)


@dataclass(frozen=True)
class Accuracy:
    """Scores of the items both backends answered: `both` right, `nvidia_only` right,
    `ascend_only` right, `neither`; `tolerance` in percentage points."""

    both: int
    nvidia_only: int
    ascend_only: int
    neither: int
    tolerance: float

    @property
    def items(self) -> int:
        return self.both + self.nvidia_only + self.ascend_only + self.neither

    def correct(self, hardware: str) -> int:
        """Items `hardware` answered right."""
        return self.both + (self.nvidia_only if hardware == "nvidia" else self.ascend_only)

    def rate(self, hardware: str) -> float:
        """Accuracy of `hardware` in % (0 when no item was scored)."""
        return 100.0 * self.correct(hardware) / self.items if self.items else 0.0

    def interval(self, hardware: str) -> tuple[float, float]:
        """Wilson 95 % interval of `hardware`'s accuracy, in %."""
        low, high = wilson(self.correct(hardware), self.items)
        return 100 * low, 100 * high

    @property
    def difference(self) -> float:
        """Ascend's accuracy minus NVIDIA's, in points."""
        return self.rate("ascend") - self.rate("nvidia")

    @property
    def difference_interval(self) -> tuple[float, float]:
        """Newcombe 95 % interval of Ascend - NVIDIA, in points."""
        low, high = paired_difference(self.both, self.nvidia_only, self.ascend_only, self.neither)
        return 100 * low, 100 * high

    @property
    def verdict(self) -> str:
        """`pass`, `fail` or `inconclusive` (see the module's docstring)."""
        low, high = self.difference_interval
        if not self.correct("nvidia"):
            return "inconclusive"
        if high < -self.tolerance:
            return "fail"
        return "pass" if low >= -self.tolerance else "inconclusive"

    @property
    def reason(self) -> str:
        """One sentence explaining the verdict, with the interval in points."""
        low, high = self.difference_interval
        span = f"95 % interval of ascend - nvidia [{low:+.1f}, {high:+.1f}] points"
        if not self.correct("nvidia"):
            return (
                f"nvidia answered none of the {self.items} items right: these items do not "
                "measure this model (check the answers, the prompts' format and --max-tokens)"
            )
        if self.verdict == "fail":
            return f"ascend is below nvidia by more than {self.tolerance:g} points ({span})"
        if self.verdict == "pass":
            return f"ascend is within {self.tolerance:g} points of nvidia or better ({span})"
        return (
            f"inconclusive: {self.items} items are too few to tell whether ascend is within "
            f"{self.tolerance:g} points of nvidia ({span}); use more items"
        )

    def to_json(self) -> dict[str, Any]:
        """The report's `accuracy` section; rates and intervals in %, rounded to 0.01."""
        per_backend = {
            hw: {
                "correct": self.correct(hw),
                "accuracy": round(self.rate(hw), 2),
                "wilson95": [round(v, 2) for v in self.interval(hw)],
            }
            for hw in ("nvidia", "ascend")
        }
        return {
            "items": self.items,
            "tolerancePoints": self.tolerance,
            "verdict": self.verdict,
            "reason": self.reason,
            "backends": per_backend,
            "differencePoints": round(self.difference, 2),
            "difference95": [round(v, 2) for v in self.difference_interval],
            "table": {
                "both": self.both,
                "nvidiaOnly": self.nvidia_only,
                "ascendOnly": self.ascend_only,
                "neither": self.neither,
            },
        }
