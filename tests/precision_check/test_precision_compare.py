"""compare() on hand-built answers (the Difference a report shows) and how the checker quotes
a body it cannot use."""

from __future__ import annotations

from precision_check.compare import Difference, compare
from precision_check.options import Options
from precision_check.shapes import Answer, head


def test_head_quotes_the_first_80_characters_and_replaces_bad_bytes():
    body = b"\xff<html>" + b"x" * 100
    assert head(body) == repr("\ufffd<html>" + "x" * 73)
    assert head(b"") == "''"


# --- compare() on hand-built answers: the Difference a report shows -----------------------

TOP = (("Paris", -0.1), ("Lyon", -2.5), ("Nice", -3.0), ("Lille", -3.2), ("Metz", -3.9))


def answer(*tokens: str, top=None) -> Answer:
    return Answer("".join(tokens), tokens, (-0.1,) * len(tokens), top or (TOP,) * len(tokens))


def topk(k: int) -> Options:
    return Options("http://127.0.0.1:1", "http://127.0.0.1:2", mode="topk", top_k=k)


def test_topk_tolerates_a_swap_within_the_top_k_and_names_both_ranks():
    nvidia, ascend = answer("The", " ", "Paris"), answer("The", " ", "Lyon")
    assert compare(topk(2), nvidia, ascend) == Difference(
        2,
        "token",
        4,
        "token 2: nvidia 'Paris' is #1 of ascend's top-2, ascend 'Lyon' is #2 of nvidia's",
        tolerated=True,
    )


def test_topk_counts_a_token_ranked_just_beyond_k_as_a_mismatch():
    # "Nice" is #3 of NVIDIA's alternatives: inside a top-5, outside a top-2.
    nvidia, ascend = answer("Paris"), answer("Nice")
    assert compare(topk(2), nvidia, ascend) == Difference(
        0,
        "token",
        0,
        "token 0: ascend 'Nice' is not in nvidia's top-2 ('Paris' -0.1, 'Lyon' -2.5, 'Nice' -3…)",
    )
    assert compare(topk(3), nvidia, ascend).tolerated
    # and the other way round: NVIDIA's token beyond Ascend's top-2
    assert compare(topk(2), ascend, nvidia).detail == (
        "token 0: nvidia 'Nice' is not in ascend's top-2 ('Paris' -0.1, 'Lyon' -2.5, 'Nice' -3…)"
    )


def test_topk_names_both_sides_when_neither_token_is_in_the_other_top_k():
    top = (("a", -0.1), ("b", -1.0))
    nvidia, ascend = answer("x", top=(top,)), answer("y", top=(top,))
    assert compare(topk(2), nvidia, ascend).detail == (
        "token 0: ascend 'y' is not in nvidia's top-2 ('a' -0.1, 'b' -1); "
        "nvidia 'x' is not in ascend's top-2 ('a' -0.1, 'b' -1)"
    )


def test_every_mode_counts_a_truncated_answer_as_different():
    full, short = answer("Paris", " is", " big"), answer("Paris", " is")
    assert compare(topk(5), full, short) == Difference(
        2, "token", 8, "ascend's answer stops after 2 tokens, nvidia's goes on"
    )
    exact = Options("http://127.0.0.1:1", "http://127.0.0.1:2")
    assert compare(exact, Answer("Paris is big"), Answer("Paris is")) == Difference(
        8, "char", 8, "ascend's answer stops after 8 chars, nvidia's goes on"
    )
    assert compare(exact, Answer("Paris"), Answer("Lyon")).detail == "texts differ"
    tokens = Options("http://127.0.0.1:1", "http://127.0.0.1:2", mode="logprobs")
    assert compare(tokens, answer("Paris"), answer("Lyon")).detail == "tokens differ"


def test_a_top_k_detail_shows_three_leaders_and_marks_more() -> None:
    """The detail of a swap outside the top-k names the three most likely tokens of the
    position, with `…` only when the backend returned more than three."""
    from precision_check.compare import _leaders

    three = (("a", -0.1), ("b", -1.0), ("c", -2.0))
    assert _leaders(three) == "'a' -0.1, 'b' -1, 'c' -2"
    assert _leaders((*three, ("d", -3.0))) == "'a' -0.1, 'b' -1, 'c' -2…"
    assert _leaders((*three, ("d", -3.0), ("e", -4.0))) == "'a' -0.1, 'b' -1, 'c' -2…"
