"""Benchmark (`make bench`): 50 prompts, both backends at 100 ms per answer.

The seed article's loop asks NVIDIA, then Ascend, one request at a time: 100 round trips in
series, about 10 s. The checker keeps `concurrency` requests in flight on each backend, so its
physical limit is ceil(prompts / concurrency) x latency = ceil(50 / 8) x 0.1 s = 0.7 s. The
target is a run within 1.5x of that limit. Both are measured in the same run.
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


def test_default_concurrency_against_the_articles_serial_loop(benchmark, capsys):
    if benchmark.disabled:
        pytest.skip("speed figure: run `make bench`")
    prompts = [Prompt(f"b{i:02d}", f"Benchmark prompt {i}: describe item {i}.") for i in range(50)]
    slow = Behaviour(latency=LATENCY)
    with OpenAIServer(slow) as nvidia, OpenAIServer(slow) as ascend:
        options = Options(nvidia=nvidia.url, ascend=ascend.url)
        report = benchmark.pedantic(run_check, args=(options, prompts), rounds=3, iterations=1)
        started = time.perf_counter()
        serial = article_loop(prompts, nvidia.url, ascend.url)
        article = time.perf_counter() - started
    assert report.exit_code == 0 and report.compared == PROMPTS
    assert len(serial) == PROMPTS and all(n == a for n, a in serial)
    concurrency = DEFAULTS["concurrency"]
    limit = math.ceil(PROMPTS / concurrency) * LATENCY
    ours = benchmark.stats.stats.median
    figures = {
        "prompts": PROMPTS,
        "latency_s": LATENCY,
        "concurrency": concurrency,
        "physical_limit_s": round(limit, 3),
        "checker_median_s": round(ours, 3),
        "ratio_to_limit": round(ours / limit, 2),
        "article_serial_s": round(article, 3),
        "speedup_vs_article": round(article / ours, 1),
        "target_ratio": TARGET,
    }
    benchmark.extra_info.update(figures)
    with capsys.disabled():
        print("\nprecision-check benchmark:", json.dumps(figures))
