"""The topk mode (vLLM's `check_logprobs_close`), the same-hardware baseline and truncated
answers, against local OpenAI-compatible servers that model numeric drift."""

from __future__ import annotations

import pytest

import precision_check as checker
from precision_check.compare import first_difference
from precision_check.shapes import parse_answer
from tests.support.precision_servers import (
    Behaviour,
    OpenAIServer,
    ranking,
    run_main,
    selected,
    tokens_for,
)

BUILTIN = checker.load_prompts(None)
SWAPPED = [p for p in BUILTIN if selected(p.prompt, 0.25, "swap")]
UNSTABLE = [p for p in BUILTIN if selected(p.prompt, 0.25, "unstable")]


def test_the_drift_fixture_selects_a_part_of_the_builtin_prompts():
    """The rates below select these many of the 24 prompts (a fact of the fixture)."""
    assert (len(SWAPPED), len(UNSTABLE)) == (8, 7)


@pytest.mark.parametrize(
    ("mode", "flags"),
    [
        ("exact", []),
        ("prefix", ["--prefix-length", "8", "--prefix-unit", "tokens"]),
        ("logprobs", []),
        ("topk", []),
        ("topk", ["--baseline"]),
        ("exact", ["--baseline"]),
    ],
)
def test_identical_answers_pass_every_comparison_mode(capsys, tmp_path, mode, flags):
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, "--mode", mode, *flags)
    assert (result.code, result.err) == (0, [])
    report = result.report
    assert (report["status"], report["mode"], report["matchRate"]) == ("pass", mode, 100)
    runs = 2 if flags == ["--baseline"] else 1
    assert (report["runs"], report["compared"], len(ascend.requests)) == (
        runs,
        24 * runs,
        24 * runs,
    )
    assert result.markdown.startswith(f"## Precision check: PASS ({mode} mode)\n")


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_swaps_within_the_top_k_pass_topk_and_fail_exact(capsys, tmp_path, endpoint):
    drift = Behaviour(swap_rate=0.25, swap_rank=2)
    with OpenAIServer() as nvidia, OpenAIServer(drift) as ascend:
        exact = run_main(capsys, tmp_path, nvidia.url, ascend.url, "--endpoint", endpoint)
        topk = run_main(
            capsys, tmp_path, nvidia.url, ascend.url, "--endpoint", endpoint, "--mode", "topk"
        )
    assert (exact.code, exact.report["matched"]) == (1, 24 - len(SWAPPED))
    swapped = {p.id: p.prompt for p in SWAPPED}
    assert {m["prompt_id"] for m in exact.report["mismatches"]} == set(swapped)
    for m in exact.report["mismatches"]:
        (first, _), (second, _) = ranking(swapped[m["prompt_id"]], 2)[:2]
        pairs = zip(first, second, strict=False)  # two words: where they part
        common = next(i for i, (x, y) in enumerate(pairs) if x != y)
        assert m["position"] == len("".join(tokens_for(swapped[m["prompt_id"]], 2))) + common

    assert (topk.code, topk.err) == (0, [])
    assert (topk.report["matched"], topk.report["topK"]) == (24, 5)
    assert topk.out.startswith("precision check PASS: 24/24 prompts match in topk mode")
    assert "8 pairs diverged within the top-5 (tolerated)" in topk.out
    divergences = {d["prompt_id"]: d for d in topk.report["divergences"]}
    assert set(divergences) == set(swapped)
    for prompt_id, d in divergences.items():
        (nv, _), (asc, _) = ranking(swapped[prompt_id], 2)[:2]
        assert (d["unit"], d["position"]) == ("token", 2)
        assert d["detail"] == (
            f"token 2: nvidia {nv!r} is #2 of ascend's top-5, ascend {asc!r} is #2 of nvidia's"
        )
    asked = ascend.requests[-1]
    if endpoint == "chat":
        assert (asked["logprobs"], asked["top_logprobs"]) == (True, 5)
    else:
        assert asked["logprobs"] == 5


@pytest.mark.parametrize(("top_k", "expected"), [("5", 0), ("4", 1)])
def test_the_top_k_is_the_boundary(capsys, tmp_path, top_k, expected):
    """Ascend takes NVIDIA's 5th candidate: inside the top-5, outside the top-4."""
    drift = Behaviour(swap_rate=0.25, swap_rank=5)
    with OpenAIServer() as nvidia, OpenAIServer(drift) as ascend:
        flags = ("--mode", "topk", "--top-k", top_k)
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, *flags)
    assert result.code == expected
    assert len(result.report["mismatches"]) == (len(SWAPPED) if expected else 0)


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_swaps_outside_the_top_k_fail_topk(capsys, tmp_path, endpoint):
    drift = Behaviour(swap_rate=0.25, swap_rank=8)
    with OpenAIServer() as nvidia, OpenAIServer(drift) as ascend:
        flags = ("--mode", "topk", "--endpoint", endpoint, "--min-match-rate", "90")
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, *flags)
    assert (result.code, result.err) == (1, [])
    assert result.report["matched"] == 24 - len(SWAPPED) == 16
    assert "fail: match rate 66.7 % is below 90 %" in result.out
    swapped = {p.id: p.prompt for p in SWAPPED}
    for m in result.report["mismatches"]:
        candidates = ranking(swapped[m["prompt_id"]], 2)
        leaders = ", ".join(f"{t!r} {lp:.3g}" for t, lp in candidates[:3])
        assert m["detail"] == (
            f"token 2: ascend {candidates[7][0]!r} is not in nvidia's top-5 ({leaders}…)"
        )
    assert "### First mismatches (8 in all)" in result.markdown


@pytest.mark.parametrize(
    ("behaviour", "cause"),
    [
        (Behaviour(logprobs=False), "no per-token logprobs in the response"),
        (Behaviour(top_logprobs=False), "no top logprobs for token 0 in the response"),
    ],
)
def test_topk_without_logprobs_cannot_complete(capsys, tmp_path, behaviour, cause):
    with OpenAIServer() as nvidia, OpenAIServer(behaviour) as ascend:
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, "--mode", "topk")
    assert result.code == 2 and len(result.err) == 1
    assert result.err[0].startswith(f"error: ascend {ascend.url}/v1/completions: {cause}")
    assert result.report["status"] == "error" and result.report["passed"] is False


# --- response shapes ---------------------------------------------------------------------

VLLM_COMPLETION = b"""{"choices": [{"text": " a b", "logprobs": {"tokens": [" a", " b"],
  "token_logprobs": [-0.1, -0.9], "text_offset": [0, 2],
  "top_logprobs": [{" c": -2.5, " a": -0.1}, {" a": -0.5, " b": -0.9, " d": -3.0}]}}]}"""
CHAT = b"""{"choices": [{"message": {"content": " a"}, "logprobs": {"content": [{"token": " a",
  "logprob": -0.1, "bytes": [32, 97], "top_logprobs": [{"token": " a", "logprob": -0.1},
  {"token": " e", "logprob": -2.0}]}]}}]}"""
LISTED_COMPLETION = b"""{"choices": [{"text": " a", "logprobs": {"tokens": [" a"],
  "token_logprobs": [-0.1], "top_logprobs": [[{"token": " f", "logprob": -1.5},
  {"token": " a", "logprob": -0.1}]]}}]}"""


@pytest.mark.parametrize(
    ("payload", "endpoint", "top"),
    [
        (
            VLLM_COMPLETION,
            "completions",
            (((" a", -0.1), (" c", -2.5)), ((" a", -0.5), (" b", -0.9), (" d", -3.0))),
        ),
        (CHAT, "chat", (((" a", -0.1), (" e", -2.0)),)),
        (LISTED_COMPLETION, "completions", (((" a", -0.1), (" f", -1.5)),)),
    ],
    ids=["vllm-completions", "chat", "completions-as-list"],
)
def test_top_alternatives_are_read_from_each_shape_most_likely_first(payload, endpoint, top):
    assert parse_answer(payload, endpoint, want_tokens=True, want_top=True).top == top


def test_a_position_without_alternatives_is_an_error():
    payload = VLLM_COMPLETION.replace(b'{" c": -2.5, " a": -0.1}', b"null")
    with pytest.raises(checker.CheckError, match="no top logprobs for token 0"):
        parse_answer(payload, "completions", want_tokens=True, want_top=True)


# --- a truncated answer is a mismatch in every mode --------------------------------------


@pytest.mark.parametrize(
    ("flags", "unit", "position"),
    [
        ([], "char", "chars"),
        (["--mode", "prefix", "--prefix-length", "60"], "char", "chars"),
        (["--mode", "prefix", "--prefix-length", "8", "--prefix-unit", "tokens"], "token", 5),
        (["--mode", "logprobs"], "token", 5),
        (["--mode", "topk"], "token", 5),
        (["--mode", "topk", "--baseline"], "token", 5),
    ],
)
def test_a_truncated_ascend_answer_is_a_mismatch(capsys, tmp_path, flags, unit, position):
    """Ascend stops after 5 of NVIDIA's 64 tokens: a strict prefix, never a match."""
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(truncate_after=5)) as ascend:
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, *flags)
    assert (result.code, result.report["matched"]) == (1, 0)
    texts = {p.id: p.prompt for p in BUILTIN}
    for m in result.report["mismatches"]:
        where = position if unit == "token" else len("".join(tokens_for(texts[m["prompt_id"]], 5)))
        assert (m["unit"], m["position"]) == (unit, where)
        assert m["detail"] == f"ascend's answer stops after {where} {unit}s, nvidia's goes on"


def test_a_truncated_nvidia_answer_is_a_mismatch_too(capsys, tmp_path):
    with OpenAIServer(Behaviour(truncate_after=3)) as nvidia, OpenAIServer() as ascend:
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, "--mode", "topk")
    assert (result.code, len(result.report["mismatches"])) == (1, 24)
    assert result.report["mismatches"][0]["detail"] == (
        "nvidia's answer stops after 3 tokens, ascend's goes on"
    )


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [("abc", "abc", None), ("abc", "ab", 2), ("ab", "abc", 2), ("abc", "abd", 2), ("", "a", 0)],
)
def test_first_difference_of_a_strict_prefix_is_its_length(a, b, expected):
    assert first_difference(a, b) == expected


# --- the same-hardware baseline ----------------------------------------------------------


def test_a_nondeterministic_backend_passes_alone_and_is_caught_by_the_baseline(capsys, tmp_path):
    """Ascend answers 7 prompts differently every second time. Asked once it matches
    NVIDIA on all 24; asked twice it disagrees with itself on 7 (70.8 %), below 80 %."""
    unstable = Behaviour(unstable_rate=0.25)
    with OpenAIServer() as nvidia, OpenAIServer(unstable) as ascend:
        once = run_main(capsys, tmp_path, nvidia.url, ascend.url, "--min-match-rate", "80")
        flags = ("--min-match-rate", "80", "--baseline")
        twice = run_main(capsys, tmp_path, nvidia.url, ascend.url, *flags)
    assert (once.code, once.report["matchRate"]) == (0, 100)
    assert twice.code == 1
    baseline = twice.report["baseline"]
    assert baseline["withinMatchRate"] == {"nvidia": 100, "ascend": round(100 * 17 / 24, 3)}
    assert baseline["crossMatchRate"] == twice.report["matchRate"] == round(100 * 41 / 48, 3)
    assert {(r["hardware"], r["prompt_id"]) for r in baseline["repeats"]} == {
        ("ascend", p.id) for p in UNSTABLE
    }
    assert twice.report["reasons"] == [
        "ascend agrees with itself on 70.8 % of prompts, below 80 %: it does not repeat its "
        "answers at temperature 0"
    ]
    assert (
        "  baseline: nvidia agrees with itself on 100.0 %, ascend on 70.8 %, across hardware "
        "85.4 % (margin 5 points)"
    ) in twice.out
    assert twice.out.startswith("precision check MISMATCH: 41/48 answer pairs (2 runs) match")
    assert "- **Same-hardware baseline** (each prompt twice): NVIDIA 100.0 %, Ascend 70.8 %, " in (
        twice.markdown
    )


@pytest.mark.parametrize(("margin", "expected"), [("5", 1), ("15", 0)])
def test_cross_agreement_far_below_a_clean_baseline_fails(capsys, tmp_path, margin, expected):
    """Both backends repeat themselves exactly, yet Ascend differs from NVIDIA on 3 of 24
    prompts (87.5 %): a lowered --min-match-rate of 80 passes it alone, the baseline only
    within a 15-point margin."""
    drift = Behaviour(swap_rate=0.1, swap_rank=2)
    with OpenAIServer() as nvidia, OpenAIServer(drift) as ascend:
        alone = run_main(capsys, tmp_path, nvidia.url, ascend.url, "--min-match-rate", "80")
        flags = ("--min-match-rate", "80", "--baseline", "--baseline-margin", margin)
        judged = run_main(capsys, tmp_path, nvidia.url, ascend.url, *flags)
    assert (alone.code, alone.report["matchRate"]) == (0, 87.5)
    assert judged.code == expected
    assert judged.report["baseline"]["withinMatchRate"] == {"nvidia": 100, "ascend": 100}
    assert judged.report["reasons"] == (
        [
            "cross-hardware agreement 87.5 % is 12.5 points below the weaker same-hardware "
            "agreement (nvidia 100.0 %), more than the margin of 5"
        ]
        if expected
        else []
    )


def test_topk_with_the_baseline_passes_drift_and_nondeterminism_within_the_top_k(capsys, tmp_path):
    """The real-NPU case: Ascend flips near-ties against NVIDIA and, on repeats, against
    itself; topk tolerates both, so every agreement is 100 %."""
    npu = Behaviour(swap_rate=0.25, unstable_rate=0.25)
    with OpenAIServer() as nvidia, OpenAIServer(npu) as ascend:
        flags = ("--mode", "topk", "--baseline")
        result = run_main(capsys, tmp_path, nvidia.url, ascend.url, *flags)
    assert (result.code, result.err) == (0, [])
    baseline = result.report["baseline"]
    assert (baseline["withinMatchRate"], baseline["crossMatchRate"]) == (
        {"nvidia": 100, "ascend": 100},
        100,
    )
    # Run 1 diverges where Ascend swaps; run 2 where it swaps or flips, not both (a flip of
    # the swapped token takes NVIDIA's back).
    flipped = {p.id for p in SWAPPED} ^ {p.id for p in UNSTABLE}
    runs = [(d["run"], d["prompt_id"]) for d in result.report["divergences"]]
    assert sorted(runs) == sorted([(1, p.id) for p in SWAPPED] + [(2, i) for i in flipped])


def test_the_baseline_does_not_apply_to_the_accuracy_mode(capsys, tmp_path):
    flags = ("--mode", "accuracy", "--baseline")
    result = run_main(capsys, tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:10", *flags)
    assert (result.code, result.out) == (2, "")
    assert result.err == [
        "error: --baseline with --mode accuracy: the baseline repeats a comparison; one of "
        "('exact', 'prefix', 'logprobs', 'topk')"
    ]
