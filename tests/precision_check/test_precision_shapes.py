"""Reading one OpenAI-compatible answer (`precision_check.shapes`): what counts as a
well-formed per-token logprob and top-alternatives answer, and what is refused as malformed.

A malformed answer is an error of the check (exit 2), never a comparison that passes."""

from __future__ import annotations

import json

import pytest

from precision_check.options import CheckError
from precision_check.shapes import Answer, alternatives, parse_answer

TOP_MISSING = (
    "no top logprobs for token 0 in the response (completions: `logprobs: k`, chat: "
    "`top_logprobs: k`); does the server return them?"
)
NO_LOGPROBS = "no per-token logprobs in the response; does the server support them?"


def completion(tokens: list, logprobs: list, top: list | None = None) -> bytes:
    """A completions body with `choices[0].logprobs` as given (`top` omitted when None)."""
    probs: dict = {"tokens": tokens, "token_logprobs": logprobs}
    if top is not None:
        probs["top_logprobs"] = top
    return json.dumps({"choices": [{"text": "Paris", "logprobs": probs}]}).encode()


@pytest.mark.parametrize(
    "entry",
    [{"a": "-0.1"}, {"a": True}, [{"token": None, "logprob": -0.1}], [{"token": "a"}]],
    ids=["text-logprob", "bool-logprob", "no-token", "no-logprob"],
)
def test_an_alternative_needs_a_token_and_a_number(entry) -> None:
    """A logprob given as text or as a JSON boolean, or a pair without its token, is no
    alternative: the position has none, and a top-k comparison cannot judge it."""
    assert alternatives(entry) is None


def test_alternatives_are_most_likely_first_from_either_shape() -> None:
    expected = (("b", -0.1), ("a", -2.0))
    assert alternatives({"a": -2.0, "b": -0.1}) == expected
    assert alternatives([{"token": "a", "logprob": -2}, {"token": "b", "logprob": -0.1}]) == (
        ("b", -0.1),
        ("a", -2),
    )


def test_without_want_top_an_answer_needs_no_alternatives() -> None:
    """The exact and logprob modes ask for tokens only: an answer without `top_logprobs` is
    well-formed for them."""
    answer = parse_answer(completion(["Par", "is"], [-0.2, -0.01]), "completions", True)
    assert answer == Answer("Paris", ("Par", "is"), (-0.2, -0.01), ())


@pytest.mark.parametrize(
    ("tokens", "logprobs"),
    [
        ([1, 2], [-0.2, -0.01]),  # tokens that are not text, with good logprobs
        (["Par", "is"], [-0.2]),  # one logprob short, each part well-typed
        (["Par", "is"], [-0.2, "-0.01"]),  # a logprob as text
        (["Par", "is"], [-0.2, True]),  # a logprob as a JSON boolean
    ],
    ids=["token-not-text", "lengths-differ", "text-logprob", "bool-logprob"],
)
def test_malformed_per_token_logprobs_are_refused(tokens, logprobs) -> None:
    with pytest.raises(CheckError) as caught:
        parse_answer(completion(tokens, logprobs), "completions", True)
    assert str(caught.value) == NO_LOGPROBS


def test_a_missing_logprob_of_the_first_token_is_well_formed() -> None:
    """Completions report `null` for a token without a logprob (the first of an echoed
    prompt): it is no malformed answer."""
    answer = parse_answer(completion(["Par", "is"], [None, -0.01]), "completions", True)
    assert answer.logprobs == (None, -0.01)


def test_a_top_list_shorter_than_the_tokens_is_refused() -> None:
    """Alternatives for the first token only: the second token has none, so the answer
    cannot be judged top-k (the error names the first position, as a short list cannot say
    which position its entries belong to)."""
    payload = completion(["Par", "is"], [-0.2, -0.01], [{"Par": -0.2}])
    with pytest.raises(CheckError) as caught:
        parse_answer(payload, "completions", True, want_top=True)
    assert str(caught.value) == TOP_MISSING


def test_with_want_top_the_answer_keeps_its_logprobs_and_alternatives() -> None:
    payload = completion(["Par", "is"], [-0.2, -0.01], [{"Par": -0.2, "Lon": -3.0}, {"is": -0.01}])
    answer = parse_answer(payload, "completions", True, want_top=True)
    assert answer == Answer(
        "Paris",
        ("Par", "is"),
        (-0.2, -0.01),
        ((("Par", -0.2), ("Lon", -3.0)), (("is", -0.01),)),
    )
