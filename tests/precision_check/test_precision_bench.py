"""Benchmark (`make bench`): 50 prompts, both backends at 100 ms per answer.

The seed article's loop asks NVIDIA, then Ascend, one request at a time: 100 round trips in
series, about 10 s. The checker keeps `concurrency` requests in flight on each backend, so its
physical limit is ceil(prompts / concurrency) x latency per pass = ceil(50 / 8) x 0.1 s =
0.7 s (the baseline makes two passes: 1.4 s). The target is a run within 1.5x of that limit,
in every mode; each is measured in the same run, and the figures say whether it is met.
"""

from __future__ import annotations

import json
import math
import time
import urllib.request

import pytest

from precision_check import DEFAULTS, Options, Prompt, run_check
from tests.support.precision_servers import Behaviour, OpenAIServer

pytestmark = pytest.mark.benchmark

PROMPTS = 50
LATENCY = 0.1  # seconds per answer, on each backend
TARGET = 1.5  # x the physical limit
PROMPT_SET = [Prompt(f"b{i:02d}", f"Benchmark prompt {i}: describe item {i}.") for i in range(50)]


def article_loop(prompts: list[Prompt], nvidia: str, ascend: str) -> list[tuple[str, str]]:
    """The seed article's check: for each prompt, POST to NVIDIA, then to Ascend, in series."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    answers = []
    for prompt in prompts:
        pair = []
        for base in (nvidia, ascend):
            body = {"prompt": prompt.prompt, "max_tokens": 100, "temperature": 0}
            request = urllib.request.Request(
                f"{base}/v1/completions",
                json.dumps(body).encode(),
                {"Content-Type": "application/json"},
            )
            with opener.open(request, timeout=10) as response:
                pair.append(json.loads(response.read())["choices"][0]["text"])
        answers.append((pair[0], pair[1]))
    return answers


def figures(median: float, passes: int) -> dict[str, object]:
    """The run's figures against the physical limit of `passes` passes."""
    limit = passes * math.ceil(PROMPTS / DEFAULTS["concurrency"]) * LATENCY
    return {
        "prompts": PROMPTS,
        "latency_s": LATENCY,
        "concurrency": DEFAULTS["concurrency"],
        "passes": passes,
        "physical_limit_s": round(limit, 3),
        "checker_median_s": round(median, 3),
        "ratio_to_limit": round(median / limit, 2),
        "target_ratio": TARGET,
        "target_met": median <= TARGET * limit,
    }


def test_default_concurrency_against_the_articles_serial_loop(benchmark, capsys):
    if benchmark.disabled:
        pytest.skip("speed figure: run `make bench`")
    slow = Behaviour(latency=LATENCY)
    with OpenAIServer(slow) as nvidia, OpenAIServer(slow) as ascend:
        options = Options(nvidia=nvidia.url, ascend=ascend.url)
        report = benchmark.pedantic(run_check, args=(options, PROMPT_SET), rounds=3, iterations=1)
        started = time.perf_counter()
        serial = article_loop(PROMPT_SET, nvidia.url, ascend.url)
        article = time.perf_counter() - started
    assert report.exit_code == 0 and report.compared == PROMPTS
    assert len(serial) == PROMPTS and all(n == a for n, a in serial)
    result = figures(benchmark.stats.stats.median, passes=1)
    result["article_serial_s"] = round(article, 3)
    result["speedup_vs_article"] = round(article / benchmark.stats.stats.median, 1)
    benchmark.extra_info.update(result)
    with capsys.disabled():
        print("\nprecision-check benchmark (exact):", json.dumps(result))


@pytest.mark.parametrize(("mode", "baseline"), [("topk", False), ("topk", True), ("exact", True)])
def test_topk_and_the_baseline_hold_the_speed_per_pass(benchmark, capsys, mode, baseline):
    """topk asks for 5 alternatives per token (bigger answers to parse); the baseline asks
    every prompt twice, queued as a second pass behind the first."""
    if benchmark.disabled:
        pytest.skip("speed figure: run `make bench`")
    slow = Behaviour(latency=LATENCY)
    drift = Behaviour(latency=LATENCY, swap_rate=0.25)
    with OpenAIServer(slow) as nvidia, OpenAIServer(drift if mode == "topk" else slow) as ascend:
        options = Options(nvidia=nvidia.url, ascend=ascend.url, mode=mode, baseline=baseline)
        report = benchmark.pedantic(run_check, args=(options, PROMPT_SET), rounds=3, iterations=1)
    assert report.exit_code == 0 and report.compared == PROMPTS * options.runs
    result = figures(benchmark.stats.stats.median, passes=options.runs)
    benchmark.extra_info.update(result)
    with capsys.disabled():
        label = mode + (" --baseline" if baseline else "")
        print(f"\nprecision-check benchmark ({label}):", json.dumps(result))
