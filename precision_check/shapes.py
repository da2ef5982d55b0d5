"""Reading one OpenAI-compatible answer: its text, tokens, logprobs and top alternatives.

Shapes (OpenAI API reference, platform.openai.com/docs/api-reference; vLLM's
`vllm/entrypoints/openai/protocol.py`, which vLLM-Ascend, a vLLM platform plugin, serves
unchanged; MindIE's OpenAI-compatible endpoints implement the same reference, whose two
layouts of the top list are both read, since MindIE's own documentation could not be
checked here):

- completions: `choices[0].text`; `choices[0].logprobs.tokens[i]`, `.token_logprobs[i]`, and
  `.top_logprobs[i]` a mapping `{token: logprob}` of the `logprobs: k` most likely tokens
  (vLLM adds the chosen token when it is not among them). A list of `{token, logprob}`
  objects at that place, as the chat shape has, is read too.
- chat: `choices[0].message.content`; `choices[0].logprobs.content[i]` is `{token, logprob,
  top_logprobs: [{token, logprob}, ...]}` (`top_logprobs: k` in the request). A mapping
  `{token: logprob}` at that place is read too.

A top list may hold fewer than k entries ("in rare cases", says OpenAI); fewer alternatives
make the top-k rule stricter, never looser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .limits import loads
from .options import CheckError

Alternatives = tuple[tuple[str, float], ...]
"""One token position's most likely tokens with their logprobs, most likely first."""


@dataclass(frozen=True)
class Answer:
    """A backend's answer: its text, and its tokens with their log-probabilities and their
    top alternatives when the comparison asked for them (empty tuples otherwise)."""

    text: str
    tokens: tuple[str, ...] = ()
    logprobs: tuple[float | None, ...] = ()
    top: tuple[Alternatives, ...] = ()


def head(payload: bytes) -> str:
    """The first 80 characters of a response body, quoted, for one-line error messages."""
    return repr(payload[:80].decode("utf-8", "replace"))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def alternatives(entry: Any) -> Alternatives | None:
    """The alternatives of one position, most likely first, from `{token: logprob}` or
    `[{token, logprob}, ...]`; None when `entry` is neither (or holds a non-number or NaN)."""
    if isinstance(entry, dict):
        pairs = list(entry.items())
    elif isinstance(entry, list) and all(isinstance(e, dict) for e in entry):
        pairs = [(e.get("token"), e.get("logprob")) for e in entry]
    else:
        return None
    if not all(isinstance(t, str) and _number(v) and v == v for t, v in pairs):
        return None  # `v == v` is False for NaN, which would leave the ranking unordered
    return tuple(sorted(pairs, key=lambda pair: -pair[1]))


def _entries(choice: dict[str, Any], endpoint: str) -> tuple[str, list, list, list]:
    """(text, tokens, logprobs, raw top entries) of a choice; raises KeyError/TypeError/
    AttributeError on a missing or mistyped part."""
    logprobs = choice.get("logprobs") or {}
    if endpoint == "chat":
        content = logprobs.get("content") or []
        return (
            choice["message"]["content"],
            [entry["token"] for entry in content],
            [entry["logprob"] for entry in content],
            [entry.get("top_logprobs") for entry in content],
        )
    tokens = logprobs.get("tokens") or []
    top = logprobs.get("top_logprobs") or [None] * len(tokens)
    return choice["text"], tokens, logprobs.get("token_logprobs") or [], top


def parse_answer(
    payload: bytes, endpoint: str, want_tokens: bool, want_top: bool = False
) -> Answer:
    """An Answer from a response body; raises CheckError when it is not JSON, has no
    `choices[0]` text, the text is empty (`""`: two empty answers would match, so an empty
    completion is malformed, never a pass), it lacks the per-token logprobs `want_tokens`
    needs, or (`want_top`) any token lacks its top alternatives. Whitespace is an answer:
    with a small `max_tokens` it may be all a model says."""
    try:
        text, tokens, logprobs, top = _entries(loads(payload)["choices"][0], endpoint)
    except ValueError as exc:
        raise CheckError(f"malformed response, not JSON ({exc}): {head(payload)}") from None
    except (KeyError, IndexError, TypeError, AttributeError):
        raise CheckError(f"malformed response, no choices[0] answer: {head(payload)}") from None
    if not isinstance(text, str):
        raise CheckError(f"malformed response, the answer is not text: {head(payload)}")
    if not text:
        raise CheckError(f"malformed response, empty answer: {head(payload)}")
    well_formed = (
        len(tokens) == len(logprobs)
        and all(isinstance(t, str) for t in tokens)
        and all(v is None or _number(v) for v in logprobs)
    )
    if want_tokens and (not tokens or not well_formed):
        raise CheckError("no per-token logprobs in the response; does the server support them?")
    if not want_top:
        return Answer(text, tuple(tokens), tuple(logprobs))
    parsed = [alternatives(entry) for entry in top] if len(top) == len(tokens) else [None]
    missing = next((i for i, entry in enumerate(parsed) if not entry), None)
    if missing is not None:
        raise CheckError(
            f"no top logprobs for token {missing} in the response (completions: "
            "`logprobs: k`, chat: `top_logprobs: k`); does the server return them?"
        )
    return Answer(text, tuple(tokens), tuple(logprobs), tuple(parsed))
