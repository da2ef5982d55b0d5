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


# --- prefix and logprobs modes, and the snippets around a difference -----------------------


def options(**kw) -> Options:
    return Options("http://127.0.0.1:1", "http://127.0.0.1:2", **kw)


def scored(*pairs: tuple[str, float | None]) -> Answer:
    tokens = tuple(t for t, _ in pairs)
    return Answer("".join(tokens), tokens, tuple(lp for _, lp in pairs), ())


def test_prefix_mode_compares_only_the_first_prefix_length_characters():
    five = options(mode="prefix", prefix_length=5)
    assert compare(five, Answer("Paris is big"), Answer("Paris is small")) is None
    assert compare(five, Answer("Paris"), Answer("Paris, France")) is None
    assert compare(five, Answer("Paris"), Answer("Pari")) == Difference(
        4, "char", 4, "ascend's answer stops after 4 chars, nvidia's goes on"
    )
    assert compare(five, Answer("Pa"), Answer("Paris")) == Difference(
        2, "char", 2, "nvidia's answer stops after 2 chars, ascend's goes on"
    )
    # Without the prefix rule the same pair differs at character 9.
    assert compare(options(), Answer("Paris is big"), Answer("Paris is small")) == Difference(
        9, "char", 9, "texts differ"
    )


def test_prefix_mode_in_tokens_compares_the_first_prefix_length_tokens():
    two = options(mode="prefix", prefix_length=2, prefix_unit="tokens")
    assert compare(two, answer("Paris", " is", " big"), answer("Paris", " is", " small")) is None
    assert compare(two, answer("Paris", " was"), answer("Paris", " is")) == Difference(
        1, "token", 5, "tokens differ"
    )


def test_the_names_given_are_the_names_in_the_detail():
    named = compare(options(), Answer("ab"), Answer("abc"), names=("gpu-a", "npu-b"))
    assert named.detail == "gpu-a's answer stops after 2 chars, npu-b's goes on"


def test_logprobs_mode_reports_the_first_logprob_beyond_the_tolerance():
    tight = options(mode="logprobs", tolerance=0.5)
    a = scored(("Paris", -0.25), (" is", -1.0), (" big", -2.0))
    assert compare(tight, a, scored(("Paris", -0.5), (" is", -1.25), (" big", -2.25))) is None
    # Exactly the tolerance apart (binary-exact quarters) is within it.
    assert compare(tight, a, scored(("Paris", -0.75), (" is", -1.5), (" big", -2.5))) is None
    far = scored(("Paris", -0.25), (" is", -1.0), (" big", -3.0))
    assert compare(tight, a, far) == Difference(
        2, "token", 8, "token ' big': logprobs -2.0 vs -3.0 differ by 1 > tolerance 0.5"
    )


def test_logprobs_mode_skips_positions_neither_side_scored_and_fails_one_sided_ones():
    tight = options(mode="logprobs", tolerance=0.5)
    a = scored(("Paris", None), (" is", -1.0), (" big", -2.0))
    b = scored(("Paris", None), (" is", -1.0), (" big", -4.0))
    assert compare(tight, a, b) == Difference(
        2, "token", 8, "token ' big': logprobs -2.0 vs -4.0 differ by 2 > tolerance 0.5"
    )
    one_sided = scored(("Paris", None), (" is", None), (" big", -2.0))
    assert compare(tight, a, one_sided) == Difference(
        1, "token", 5, "token ' is': logprobs -1.0 vs None > tolerance 0.5"
    )
    assert compare(tight, one_sided, a) == Difference(
        1, "token", 5, "token ' is': logprobs None vs -1.0 > tolerance 0.5"
    )


def test_logprobs_mode_checks_tokens_before_logprobs():
    tight = options(mode="logprobs", tolerance=0.5)
    a = scored(("Paris", -0.25), (" is", -1.0))
    assert compare(tight, a, scored(("Paris", -9.0), (" was", -1.0))) == Difference(
        1, "token", 5, "tokens differ"
    )


def test_a_snippet_shows_24_characters_each_side_and_marks_each_cut():
    from precision_check.compare import snippet

    text = "".join(chr(ord("a") + i % 26) for i in range(100))
    assert snippet(text, 50) == "…" + text[26:74] + "…"
    assert snippet(text, 10) == text[:34] + "…"
    assert snippet(text, 24) == text[:48] + "…"
    assert snippet(text, 25) == "…" + text[1:49] + "…"
    assert snippet(text, 76) == "…" + text[52:]
    assert snippet(text, 75) == "…" + text[51:99] + "…"
    assert snippet("short", 2) == "short"
