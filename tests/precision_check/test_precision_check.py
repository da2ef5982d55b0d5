"""The stdlib precision checker against real OpenAI-compatible servers on 127.0.0.1: every
fault the issue lists gives its documented exit code and a one-line cause."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import precision_check as checker
from precision_check.backend import parse_answer
from tests.support.precision_servers import (
    HANG_LIMIT,
    Behaviour,
    OpenAIServer,
    refused_url,
    tokens_for,
)

FAST = ["--backoff", "0.01", "--timeout", "5", "--deadline", "20"]
BUILTIN = checker.load_prompts(None)


def run(capsys, tmp_path: Path, nvidia: str, ascend: str, *flags: str):
    """Run the checker's `main`; returns (exit code, stdout, stderr lines, JSON report)."""
    report = tmp_path / "report.json"
    code = checker.main(
        ["--nvidia", nvidia, "--ascend", ascend, *FAST, "--json", str(report), *flags]
    )
    out, err = capsys.readouterr()
    data = json.loads(report.read_text()) if report.exists() else None
    return code, out, err.splitlines(), data


def test_identical_backends_pass_with_varied_greedy_requests(capsys, tmp_path):
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        code, out, err, report = run(capsys, tmp_path, nvidia.url, ascend.url)
    assert (code, err) == (0, [])
    assert out.startswith("precision check PASS: 24/24 prompts match in exact mode (100.0 %")
    assert report["status"] == "pass" and report["matchRate"] == 100
    for server in (nvidia, ascend):
        assert len(server.requests) == len(BUILTIN) == 24
        assert len({r["prompt"] for r in server.requests}) == 24  # never one prompt repeated
        assert {(r["temperature"], r["seed"], r["max_tokens"]) for r in server.requests} == {
            (0, 0, 64)
        }


def test_one_differing_answer_fails_exact_mode_with_the_right_diff(capsys, tmp_path):
    capital = next(p.prompt for p in BUILTIN if p.id == "capital")
    diverging = Behaviour(diverge_after=3, diverges=lambda text: text == capital)
    with OpenAIServer() as nvidia, OpenAIServer(diverging) as ascend:
        code, out, err, report = run(capsys, tmp_path, nvidia.url, ascend.url)
    assert code == 1 and err == []
    assert report["matched"] == 23 and len(report["mismatches"]) == 1
    mismatch = report["mismatches"][0]
    # Token 3 is " ascend the" instead of " the": both start with a space.
    position = len("".join(tokens_for(capital, 3))) + 1
    assert (mismatch["prompt_id"], mismatch["unit"], mismatch["position"]) == (
        "capital",
        "char",
        position,
    )
    assert "ascend" in mismatch["ascend"] and "ascend" not in mismatch["nvidia"]
    assert f"mismatch capital at char {position} (texts differ)" in out
    assert out.startswith("precision check MISMATCH: 23/24 prompts match")


@pytest.mark.parametrize(("min_rate", "expected"), [("95", 0), ("96", 1)])
def test_min_match_rate_is_the_pass_criterion(capsys, tmp_path, min_rate, expected):
    """23 of 24 prompts match: 95.8 %."""
    diverging = Behaviour(diverge_after=0, diverges=lambda text: "Australia" in text)
    with OpenAIServer() as nvidia, OpenAIServer(diverging) as ascend:
        code, *_ = run(capsys, tmp_path, nvidia.url, ascend.url, "--min-match-rate", min_rate)
    assert code == expected


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--mode", "exact"], 1),
        (["--mode", "prefix", "--prefix-length", "5", "--prefix-unit", "tokens"], 0),
        (["--mode", "prefix", "--prefix-length", "6", "--prefix-unit", "tokens"], 1),
        (["--mode", "prefix", "--prefix-length", "10"], 0),  # 5 tokens are >= 15 characters
    ],
)
def test_prefix_mode_allows_divergence_after_n(capsys, tmp_path, flags, expected):
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(diverge_after=5)) as ascend:
        code, _out, err, report = run(capsys, tmp_path, nvidia.url, ascend.url, *flags)
    assert (code, err) == (expected, [])
    if expected and "tokens" in flags:
        assert {(m["unit"], m["position"]) for m in report["mismatches"]} == {("token", 5)}


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
@pytest.mark.parametrize(("noise", "expected"), [(0.004, 0), (0.05, 1)])
def test_logprob_noise_inside_and_outside_tolerance(capsys, tmp_path, endpoint, noise, expected):
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(logprob_noise=noise)) as ascend:
        code, _out, err, report = run(
            capsys, tmp_path, nvidia.url, ascend.url, "--mode", "logprobs", "--endpoint", endpoint
        )
    assert (code, err) == (expected, [])
    assert all(r.get("logprobs") for r in ascend.requests)
    if expected:
        assert len(report["mismatches"]) == 24
        assert "differ by 0.05 > tolerance 0.01" in report["mismatches"][0]["detail"]


def test_logprobs_mode_without_logprobs_cannot_complete(capsys, tmp_path):
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(logprobs=False)) as ascend:
        code, _out, err, _ = run(capsys, tmp_path, nvidia.url, ascend.url, "--mode", "logprobs")
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"error: ascend {ascend.url}/v1/completions: no per-token logprobs")


@pytest.mark.parametrize("status", [503, 429])
def test_burst_of_5xx_or_429_is_recovered_by_retry(capsys, tmp_path, status):
    burst = Behaviour(fail_first=3, fail_status=status)
    with OpenAIServer() as nvidia, OpenAIServer(burst) as ascend:
        code, _out, err, report = run(capsys, tmp_path, nvidia.url, ascend.url)
    assert (code, err) == (0, [])
    assert ascend.failures == 3 and len(ascend.requests) == 24 + 3
    assert report["backends"]["ascend"]["retries"] == 3


def test_permanent_500_is_exit_2_with_one_line_and_bounded_retries(capsys, tmp_path):
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(always_status=500)) as ascend:
        code, out, err, report = run(capsys, tmp_path, nvidia.url, ascend.url, "--retries", "2")
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"error: ascend {ascend.url}/v1/completions: HTTP 500: ")
    assert err[0].endswith("2 retries)")
    assert max(Counter(r["prompt"] for r in ascend.requests).values()) == 3  # 1 + 2 retries
    assert out.startswith("precision check ERROR") and report["passed"] is False


def test_connection_refused_is_exit_2(capsys, tmp_path):
    with OpenAIServer() as nvidia:
        code, _out, err, _ = run(capsys, tmp_path, nvidia.url, refused_url())
    assert code == 2 and len(err) == 1
    assert "cannot connect (Connection refused)" in err[0] and err[0].startswith("error: ascend")


def test_hang_hits_the_request_timeout(capsys, tmp_path):
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(hang=True)) as ascend:
        code, _out, err, report = run(capsys, tmp_path, nvidia.url, ascend.url, "--timeout", "1")
        hanging = ascend.in_flight  # the server holds them until it stops
    assert code == 2 and len(err) == 1
    assert re.fullmatch(
        rf"error: ascend {ascend.url}/v1/completions: no answer within 1 s \(prompt \S+\)",
        err[0],
    ), err[0]
    # The check returned while its requests still hung: it did not wait for them.
    assert hanging == 8 == len(ascend.requests) and report["passed"] is False


def test_hang_hits_the_total_deadline(capsys, tmp_path):
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(hang=True)) as ascend:
        code, _out, err, report = run(
            capsys, tmp_path, nvidia.url, ascend.url, "--timeout", "30", "--deadline", "0.5"
        )
        hanging = ascend.in_flight
    assert code == 2 and len(err) == 1
    found = re.fullmatch(
        r"error: deadline of 0\.5 s passed with (\d+) of 48 requests unanswered", err[0]
    )
    assert found and int(found[1]) >= 24, err  # all of Ascend's, and NVIDIA's if it was slow
    assert hanging == 8 and report["status"] == "error"


def test_malformed_json_is_exit_2(capsys, tmp_path):
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(malformed=True)) as ascend:
        code, out, err, _ = run(capsys, tmp_path, nvidia.url, ascend.url)
    assert code == 2 and len(err) == 1
    assert "malformed response, not JSON" in err[0]
    assert "more errors (see --json)" in out or out.count("error:") == 1


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_empty_answers_from_both_backends_are_exit_2_not_a_pass(capsys, tmp_path, endpoint):
    empty = Behaviour(empty=True, logprobs=False)
    with OpenAIServer(empty) as nvidia, OpenAIServer(empty) as ascend:
        code, out, err, report = run(
            capsys, tmp_path, nvidia.url, ascend.url, "--endpoint", endpoint, "--concurrency", "1"
        )
    assert code == 2 and len(err) == 1
    path = "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"
    assert re.fullmatch(
        rf"error: (nvidia|ascend) http://127\.0\.0\.1:\d+{re.escape(path)}: "
        r"malformed response, empty answer: .* \(prompt \S+\)",
        err[0],
    ), err[0]
    assert out.startswith("precision check ERROR") and report["passed"] is False


@pytest.mark.parametrize(
    ("payload", "cause"),
    [
        (b'{"choices": [{"text": ""}]}', "empty answer"),
        (b'{"choices": []}', "no choices[0] answer"),
        (b'{"error": "overloaded"}', "no choices[0] answer"),
        (b'{"choices": [{"text": 42}]}', "the answer is not text"),
        (b"<html>502</html>", "not JSON"),
    ],
)
def test_answers_without_text_are_malformed(payload, cause):
    with pytest.raises(checker.CheckError, match=re.escape(f"malformed response, {cause}")):
        parse_answer(payload, "completions", want_tokens=False)


def test_chat_endpoint_and_yaml_prompts(capsys, tmp_path):
    prompts = tmp_path / "prompts.yaml"
    prompts.write_text("- Name a prime number.\n- id: colour\n  prompt: Name a colour.\n")
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        code, _out, err, report = run(
            capsys,
            tmp_path,
            nvidia.url,
            ascend.url,
            "--endpoint",
            "chat",
            "--prompts",
            str(prompts),
            "--model",
            "qwen2-7b",
            "--no-seed",
        )
    assert (code, err, report["prompts"]) == (0, [], 2)
    assert sorted(r["messages"][0]["content"] for r in ascend.requests) == [
        "Name a colour.",
        "Name a prime number.",
    ]
    assert all(r["model"] == "qwen2-7b" and "seed" not in r for r in ascend.requests)


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ('"Same prompt"\n"Same prompt"\n', "prompts.jsonl item 2 repeats item 1"),
        ("", "prompts.jsonl: expected a non-empty list of prompts"),
        ('{"prompt": "a"}\nnot json\n', "prompts.jsonl line 2: not JSON"),
        ('{"prompt": "a", "temperature": 1}\n', "prompts.jsonl item 1: expected a string"),
        ('{"messages": [{"role": "user", "content": "hi"}]}\n', "use --endpoint chat"),
    ],
)
def test_bad_prompt_files_are_exit_2_before_any_request(capsys, tmp_path, text, cause):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(text)
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        code, _out, err, _ = run(
            capsys, tmp_path, nvidia.url, ascend.url, "--prompts", str(prompts)
        )
    assert code == 2 and len(err) == 1 and cause in err[0]
    assert nvidia.requests == [] == ascend.requests


@pytest.mark.parametrize(
    ("flags", "cause"),
    [
        (["--concurrency", "0"], "--concurrency 0: must be at least 1"),
        (["--min-match-rate", "150"], "--min-match-rate 150: must be above 0 and at most 100"),
        (["--pushgateway", "http://127.0.0.1:9"], "--pushgateway needs --ascend-image"),
        (
            ["--push-label", "job=x", "--ascend-image", "a:1", "--pushgateway", "http://h"],
            "--push-label 'job=x'",
        ),
        (["--prompts", "/nonexistent/p.jsonl"], "prompts file /nonexistent/p.jsonl: No such"),
    ],
)
def test_bad_options_are_one_line_exit_2(capsys, tmp_path, flags, cause):
    code, _out, err, _ = run(capsys, tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:10", *flags)
    assert code == 2 and len(err) == 1 and cause in err[0]


def test_a_url_that_is_not_http_is_named(capsys, tmp_path):
    code, _out, err, _ = run(capsys, tmp_path, "inference-nvidia:8000", "http://127.0.0.1:9")
    assert code == 2 and err == [
        "error: --nvidia 'inference-nvidia:8000': expected an http(s) URL, e.g. http://host:8000"
    ]


def test_argv_round_trip():
    options = checker.Options(
        nvidia="http://n:8000",
        ascend="http://a:8000/v1",
        mode="topk",
        top_k=3,
        baseline=True,
        baseline_margin=2.5,
        markdown_report="report.md",
        tolerance=0.0125,
        seed=None,
        push_labels=("namespace=inference",),
        ascend_image="r/i:v2-npu",
        pushgateway="http://pg:9091",
        deadline=120.5,
    )
    parser = checker.cli.build_parser()
    argv = checker.to_argv(options)
    assert checker.options_from_args(parser.parse_args(argv)) == options
    assert argv[argv.index("--mode") : argv.index("--mode") + 6] == [
        "--mode", "topk", "--tolerance", "0.0125", "--top-k", "3"
    ]  # fmt: skip
    assert "--baseline" in argv and "True" not in argv
    no_baseline = parser.parse_args([*argv, "--no-baseline"])
    assert checker.options_from_args(no_baseline).baseline is False


def test_the_package_imports_only_the_standard_library():
    """The Job runs it in a stock Python image; only YAML prompt files (local CLI) use PyYAML,
    imported inside the function that reads them."""
    package = Path(checker.__file__).parent
    outside = {}
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
                for name in (
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                ):
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top != "__future__":
                        outside[f"{path.name}:{top}"] = node in tree.body
    assert outside == {"prompts.py:yaml": False}


# --- guards found by a fresh-user trial ---------------------------------------------------


@pytest.mark.parametrize(
    "ascend",
    [
        "http://127.0.0.1:18001",
        "http://127.0.0.1:18001/",
        "HTTP://127.0.0.1:18001/v1",
        "http://localhost:18001/v1/",
    ],
)
def test_the_same_server_twice_is_refused(capsys, tmp_path, ascend):
    """Comparing a backend with itself always passes; it proves nothing."""
    code, out, err, _ = run(capsys, tmp_path, "http://127.0.0.1:18001", ascend)
    assert (code, out) == (2, "")
    assert err == [
        "error: --nvidia and --ascend are the same server (http://127.0.0.1:18001): "
        "a backend compared with itself always matches"
    ]


def test_default_ports_count_as_the_same_server():
    with pytest.raises(checker.CheckError, match="are the same server"):
        checker.Options(nvidia="http://gpu.example", ascend="http://GPU.example:80/")
    assert checker.Options(nvidia="http://h:8000", ascend="http://h:8001").ascend


@pytest.mark.parametrize("rate", ["0", "0.0"])  # "-1": the flag parser refuses it (test_faults)
def test_a_zero_min_match_rate_is_refused(capsys, tmp_path, rate):
    """A check where nothing has to match would pass while every answer differs."""
    code, out, err, _ = run(
        capsys, tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:10", "--min-match-rate", rate
    )
    assert (code, out, len(err)) == (2, "", 1)
    assert err[0].startswith(f"error: --min-match-rate {float(rate):g}: must be above 0")


def test_nothing_matched_or_compared_never_passes():
    options = checker.Options(nvidia="http://n:8000", ascend="http://a:8000", min_match_rate=1e-12)
    nothing_matched = checker.Report(options, prompts=24, compared=24)
    nothing_matched.mismatches = [checker.Mismatch("p", "p", 0, "char", "a", "b", "")] * 24
    assert (nothing_matched.matched, nothing_matched.exit_code) == (0, checker.EXIT_MISMATCH)
    nothing_compared = checker.Report(options, prompts=24, compared=0)
    assert nothing_compared.exit_code == checker.EXIT_ERROR


def test_a_hanging_backend_ends_the_run_within_one_timeout(tmp_path):
    """The whole process, not only the reported duration: no second round of requests, no
    wait for abandoned ones at exit. Shown without a clock: the process has ended, with the
    timeout as its one error, while the server still holds all 8 requests (it releases them
    only when it stops, up to a minute later)."""
    timeout = 2.0
    report = tmp_path / "report.json"
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(hang=True)) as ascend:
        command = [sys.executable, "-m", "precision_check", "--nvidia", nvidia.url]
        command += ["--ascend", ascend.url, "--timeout", str(timeout), "--json", str(report)]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=HANG_LIMIT / 2,
            env={"PYTHONPATH": str(Path(checker.__file__).parents[1])},
        )
        hanging = ascend.in_flight
    assert done.returncode == 2, done.stderr
    assert re.fullmatch(
        rf"error: ascend {ascend.url}/v1/completions: no answer within {timeout:g} s "
        r"\(prompt \S+\)\n",
        done.stderr,
    ), done.stderr
    assert hanging == 8 == len(ascend.requests)  # one round at --concurrency 8, none after
    assert json.loads(report.read_text())["durationSeconds"] >= timeout
