"""Comparing two answers to one prompt: exact, prefix, logprobs and top-k closeness.

The `topk` rule is vLLM's `check_logprobs_close` (vllm-project/vllm, tests/models/utils.py):
walk both token sequences; at the first position where they differ, each side's token must be
among the other side's top-k alternatives at that position, and the comparison of the pair
stops there (after a divergence the sequences are expected to differ). vLLM's rule ends with
the shorter sequence; here an answer that stops where the other goes on is a mismatch in every
mode, because nothing shows that the missing tokens were close.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .options import Options
from .shapes import Alternatives, Answer

SNIPPET = 24
"""Characters shown on each side of the first difference."""


@dataclass(frozen=True)
class Difference:
    """Where and why two answers differ: the first differing `position` in `unit`s (`char`
    or `token`), the character offset `at` of that position in the first answer (where the
    snippets are centred), the reason, and whether the mode `tolerated` it (`topk`: both
    tokens within the other's top-k)."""

    position: int
    unit: str
    at: int
    detail: str
    tolerated: bool = False


def first_difference(a: Sequence[Any], b: Sequence[Any]) -> int | None:
    """Index of the first differing element of two sequences; None when they are equal.
    A sequence that is a strict prefix of the other differs at its length."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


def snippet(text: str, position: int) -> str:
    """`text` around `position`, `SNIPPET` characters each side, `…` where cut."""
    start, end = max(0, position - SNIPPET), position + SNIPPET
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _why(a: Sequence[Any], b: Sequence[Any], position: int, unit: str, names: Sequence[str]) -> str:
    """`texts differ` / `tokens differ`, or which answer stops where the other goes on."""
    if position < min(len(a), len(b)):
        return f"{'texts' if unit == 'char' else 'tokens'} differ"
    short, long = (names[0], names[1]) if len(a) < len(b) else (names[1], names[0])
    return f"{short}'s answer stops after {position} {unit}s, {long}'s goes on"


def _rank(token: str, top: Alternatives, k: int) -> int | None:
    """1-based rank of `token` among the `k` most likely of `top`; None when not among them."""
    ranked = [t for t, _lp in top[:k]]
    return ranked.index(token) + 1 if token in ranked else None


def _leaders(top: Alternatives) -> str:
    """The three most likely tokens of a position with their logprobs, for a detail."""
    return ", ".join(f"{t!r} {lp:.3g}" for t, lp in top[:3]) + ("…" if len(top) > 3 else "")


def _topk(options: Options, a: Answer, b: Answer, names: Sequence[str]) -> Difference | None:
    k = options.top_k
    for i, (x, y) in enumerate(zip(a.tokens, b.tokens, strict=False)):
        if x == y:
            continue
        at = len("".join(a.tokens[:i]))
        x_in_b, y_in_a = _rank(x, b.top[i], k), _rank(y, a.top[i], k)
        if x_in_b and y_in_a:
            detail = (
                f"token {i}: {names[0]} {x!r} is #{x_in_b} of {names[1]}'s top-{k}, "
                f"{names[1]} {y!r} is #{y_in_a} of {names[0]}'s"
            )
            return Difference(i, "token", at, detail, tolerated=True)
        outside = [
            f"{who} {token!r} is not in {other}'s top-{k} ({_leaders(top)})"
            for who, token, other, top, rank in (
                (names[1], y, names[0], a.top[i], y_in_a),
                (names[0], x, names[1], b.top[i], x_in_b),
            )
            if not rank
        ]
        return Difference(i, "token", at, f"token {i}: " + "; ".join(outside))
    position = first_difference(a.tokens, b.tokens)
    if position is None:
        return None
    at = len("".join(a.tokens[:position]))
    return Difference(position, "token", at, _why(a.tokens, b.tokens, position, "token", names))


def compare(
    options: Options, a: Answer, b: Answer, names: Sequence[str] = ("nvidia", "ascend")
) -> Difference | None:
    """The difference of two answers to one prompt under `options.mode`, or None when they
    agree. `names` name the two sides in the detail.

    - `exact`: identical text.
    - `prefix`: identical first `prefix_length` characters (or backend tokens).
    - `logprobs`: identical tokens, and every token's logprob within `tolerance` (a NaN
      never is, nor an infinity: their difference is NaN or infinite).
    - `topk`: identical tokens up to the first difference, where each token is within the
      other side's `top_k` (a tolerated difference); identical lengths otherwise.

    Every mode counts an answer that is a strict prefix of the other as different.
    """
    if options.mode == "topk":
        return _topk(options, a, b, names)
    limit = options.prefix_length if options.mode == "prefix" else None
    if not options.wants_tokens:
        x, y = a.text[:limit], b.text[:limit]
        position = first_difference(x, y)
        return (
            None
            if position is None
            else Difference(position, "char", position, _why(x, y, position, "char", names))
        )
    x, y = a.tokens[:limit], b.tokens[:limit]
    position = first_difference(x, y)
    if position is not None:
        at = len("".join(a.tokens[:position]))
        return Difference(position, "token", at, _why(x, y, position, "token", names))
    if options.mode != "logprobs":
        return None
    for index, (p, q) in enumerate(zip(a.logprobs, b.logprobs, strict=True)):
        if p is None and q is None:
            continue
        if p is None or q is None or not abs(p - q) <= options.tolerance:  # NaN: differ
            delta = "" if p is None or q is None else f" differ by {abs(p - q):.4g}"
            detail = f"token {a.tokens[index]!r}: logprobs {p} vs {q}{delta}"
            at = len("".join(a.tokens[:index]))
            return Difference(index, "token", at, f"{detail} > tolerance {options.tolerance:g}")
    return None
