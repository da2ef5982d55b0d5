"""`verify-precision` records evidence only for a check at the built-in minimums (issue 34):
at least `MIN_PROMPTS` prompts, `--max-tokens` at least `MIN_MAX_TOKENS` in the comparison
modes, a `prefix` check's prefix at least `MIN_PREFIX`. A shorter check, from flags or from
the stack's `precisionCheck`, is refused in one line saying what it lacks, before any prompt
is sent, and records nothing; one at the minimums records. Real OpenAI-compatible servers on
127.0.0.1 (`tests.support.precision_servers`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualstack.cli import main
from dualstack.commands.verify_precision import MIN_MAX_TOKENS, MIN_PREFIX, MIN_PROMPTS
from dualstack.repo.stackfile import read_config, set_config_values
from tests.conftest import git
from tests.support.precision_servers import Behaviour, OpenAIServer

FAST = ["--backoff", "0.01", "--timeout", "5", "--deadline", "30"]
NEW_NPU = "registry/inference-service:v1.2.4-npu"
HISTORY = "dualstack-inference:verifiedImages"


@pytest.fixture
def stack_repo(git_repo: Path) -> Path:
    set_config_values(git_repo, "prod", {"ascend": {"image": NEW_NPU}})
    git(git_repo, "commit", "-qam", "new ascend image")
    return git_repo


def prompts_file(folder: Path, count: int) -> Path:
    path = folder / f"prompts-{count}.jsonl"
    lines = [json.dumps({"id": f"q{i:02d}", "prompt": f"Count to {i}."}) for i in range(count)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def verify(repo: Path, nvidia: str, ascend: str, *flags: str) -> int:
    argv = ["verify-precision", "--stack", "prod", "--nvidia", nvidia, "--ascend", ascend]
    return main(["-C", str(repo), *argv, *FAST, *flags])


def refused(stack_repo, capsys, flags, stack=None) -> str:
    """Run the check with `flags` (and the stack's `precisionCheck` `stack`): exit 2, one
    line, nothing sent, nothing written; the line."""
    if stack is not None:
        set_config_values(stack_repo, "prod", {"precisionCheck": stack})
        git(stack_repo, "commit", "-qam", "short check")
    before = (stack_repo / "Pulumi.prod.yaml").read_bytes()
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        assert verify(stack_repo, nvidia.url, ascend.url, *flags) == 2
    assert nvidia.requests == [] and ascend.requests == []
    assert (stack_repo / "Pulumi.prod.yaml").read_bytes() == before
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: not recorded: evidence needs the "), err
    assert err.endswith(
        "; verifiedImages unchanged (dualstack precision-check runs a shorter "
        "check without recording it)\n"
    ), err
    return err


SHORT = {
    "one prompt": (["--prompts", "{1}"], None, "1 prompt in --prompts (at least 20)"),
    "19 prompts": (["--prompts", "{19}"], None, "19 prompts in --prompts (at least 20)"),
    "3 stack prompts": (
        [],
        {"prompts": ["a?", "b?", "c?"]},
        "3 prompts in precisionCheck.prompts (at least 20)",
    ),
    "max-tokens 1": (["--max-tokens", "1"], None, "--max-tokens 1 (at least 16)"),
    "max-tokens 15": (["--max-tokens", "15"], None, "--max-tokens 15 (at least 16)"),
    "stack maxTokens 4": ([], {"maxTokens": 4}, "precisionCheck.maxTokens 4 (at least 16)"),
    "topk max-tokens 2": (
        ["--mode", "topk", "--max-tokens", "2"],
        None,
        "--max-tokens 2 (at least 16)",
    ),
    "logprobs max-tokens 8": (
        ["--mode", "logprobs", "--max-tokens", "8"],
        None,
        "--max-tokens 8 (at least 16)",
    ),
    "prefix 1 char": (
        ["--mode", "prefix", "--prefix-length", "1"],
        None,
        "--prefix-length 1 chars (at least 16)",
    ),
    "prefix 15 chars": (
        ["--mode", "prefix", "--prefix-length", "15"],
        None,
        "--prefix-length 15 chars (at least 16)",
    ),
    "prefix 7 tokens": (
        ["--mode", "prefix", "--prefix-unit", "tokens", "--prefix-length", "7"],
        None,
        "--prefix-length 7 tokens (at least 8)",
    ),
    "stack prefix 2 tokens": (
        [],
        {"mode": "prefix", "prefixUnit": "tokens", "prefixLength": 2},
        "precisionCheck.prefixLength 2 tokens (at least 8)",
    ),
    "all three": (
        ["--prompts", "{1}", "--max-tokens", "1", "--mode", "prefix", "--prefix-length", "1"],
        None,
        "1 prompt in --prompts (at least 20), --max-tokens 1 (at least 16), --prefix-length 1 "
        "chars (at least 16)",
    ),
}


@pytest.mark.parametrize(("flags", "stack", "lacks"), SHORT.values(), ids=SHORT.keys())
def test_a_check_below_the_minimums_is_refused_before_any_prompt(
    stack_repo, tmp_path, capsys, flags, stack, lacks
):
    flags = [prompts_file(tmp_path, int(f[1:-1])) if f.startswith("{") else f for f in flags]
    err = refused(stack_repo, capsys, [str(f) for f in flags], stack)
    assert f"this check has {lacks}; " in err
    assert "--allow-low-threshold" not in err


def test_allow_low_threshold_does_not_lower_them(stack_repo, capsys):
    refused(stack_repo, capsys, ["--max-tokens", "1", "--allow-low-threshold"])


def test_a_check_at_the_minimums_is_recorded(stack_repo, tmp_path, capsys):
    flags = [
        "--prompts",
        str(prompts_file(tmp_path, MIN_PROMPTS)),
        "--max-tokens",
        str(MIN_MAX_TOKENS),
        "--mode",
        "prefix",
        "--prefix-unit",
        "tokens",
        "--prefix-length",
        str(MIN_PREFIX["tokens"]),
    ]
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        assert verify(stack_repo, nvidia.url, ascend.url, *flags) == 0, capsys.readouterr().err
    assert len(ascend.requests) == MIN_PROMPTS
    assert {r["max_tokens"] for r in ascend.requests} == {MIN_MAX_TOKENS}
    assert {"nvidia": "registry/inference-service:v1.2.3-cuda", "ascend": NEW_NPU} in read_config(
        stack_repo, "prod"
    )[HISTORY]


def test_short_answers_are_no_lack_in_accuracy_mode(stack_repo, capsys):
    """Accuracy scores each answer against its reference: a short answer is the point."""
    from precision_check import load_prompts

    oracle = {p.prompt: p.answers[0] for p in load_prompts(None, "accuracy")}
    right = Behaviour(answers=oracle)
    with OpenAIServer(right) as nvidia, OpenAIServer(right) as ascend:
        flags = ("--mode", "accuracy", "--max-tokens", "4")
        assert verify(stack_repo, nvidia.url, ascend.url, *flags) == 0, capsys.readouterr().err
    assert read_config(stack_repo, "prod")["dualstack-inference:verifiedAscendImage"] == NEW_NPU
