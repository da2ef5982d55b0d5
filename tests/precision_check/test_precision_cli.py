"""`dualstack precision-check` and `dualstack verify-precision` as a user runs them, and the
metrics push against a real Prometheus Pushgateway on 127.0.0.1."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from components.monitoring.metric_names import PRECISION_PASSED
from dualstack.cli import main
from dualstack.repo.stackfile import read_config, set_config_values
from precision_check import load_prompts
from tests.conftest import REPO, git
from tests.support.precision_servers import Behaviour, OpenAIServer, refused_url
from tests.support.pushgateway_server import Unavailable, pushgateway_server

FAST = ["--backoff", "0.01", "--timeout", "5", "--deadline", "20"]
NEW_NPU = "registry/inference-service:v1.2.4-npu"
VERIFIED = "dualstack-inference:verifiedAscendImage"


def check(nvidia: str, ascend: str, *flags: str) -> list[str]:
    """`precision-check --nvidia URL --ascend URL FLAGS...` as a `dualstack` argument list."""
    return ["precision-check", "--nvidia", nvidia, "--ascend", ascend, *flags]


def dualstack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The `dualstack` command in a fresh process, as a user types it."""
    return subprocess.run(
        [sys.executable, "-m", "dualstack", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def test_precision_check_command_against_two_local_servers(tmp_path):
    diverging = Behaviour(diverge_after=4)
    with OpenAIServer() as nvidia, OpenAIServer() as twin, OpenAIServer(diverging) as ascend:
        same = dualstack(*check(nvidia.url, twin.url + "/v1"), cwd=tmp_path)
        prefix = ("--mode", "prefix", "--prefix-length", "5", "--prefix-unit", "tokens")
        differ = dualstack(*check(nvidia.url, ascend.url, *prefix), cwd=tmp_path)
    assert (same.returncode, same.stderr) == (0, "")
    assert same.stdout.startswith("precision check PASS: 24/24 prompts match in exact mode")
    assert differ.returncode == 1
    assert "precision check MISMATCH: 0/24 prompts match in prefix mode" in differ.stdout
    assert "mismatch explain-deep-learning at token 4 (tokens differ)" in differ.stdout


def test_precision_check_command_reports_an_unreachable_backend_in_one_line(tmp_path):
    down = refused_url()
    with OpenAIServer() as nvidia:
        flags = ("--retries", "1", "--backoff", "0.01")
        result = dualstack(*check(nvidia.url, down, *flags), cwd=tmp_path)
    assert result.returncode == 2
    cause = rf"error: ascend {down}/v1/completions: cannot connect \(Connection refused\) "
    assert re.fullmatch(cause + r"\(prompt [a-z0-9-]+, 1 retries\)\n", result.stderr)


@pytest.fixture
def stack_repo(git_repo: Path) -> Path:
    """The project's stack files in a git repo, prod moved to a new, unverified Ascend image."""
    set_config_values(git_repo, "prod", {"ascend": {"image": NEW_NPU}})
    git(git_repo, "commit", "-qam", "new ascend image")
    return git_repo


def verify(repo: Path, nvidia: str, ascend: str, *flags: str) -> int:
    """`dualstack -C REPO verify-precision --stack prod ...`; returns the exit code."""
    command = ["verify-precision", "--stack", "prod", "--nvidia", nvidia, "--ascend", ascend]
    return main(["-C", str(repo), *command, *FAST, *flags])


def test_verify_precision_records_the_image_on_pass_keeping_comments(stack_repo, capsys):
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        assert verify(stack_repo, nvidia.url, ascend.url) == 0
    out = capsys.readouterr().out
    assert f"recording verifiedAscendImage = {NEW_NPU} in Pulumi.prod.yaml (was " in out
    assert read_config(stack_repo, "prod")[VERIFIED] == NEW_NPU
    diff = git(stack_repo, "diff", "-U0", "Pulumi.prod.yaml").splitlines()
    changed = [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == [
        f"-  {VERIFIED}: registry/inference-service:v1.2.3-npu",
        f"+  {VERIFIED}: {NEW_NPU}",
        "+  dualstack-inference:verifiedImages:",
        "+    - nvidia: registry/inference-service:v1.2.3-cuda",
        f"+      ascend: {NEW_NPU}",
    ]


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [(Behaviour(diverge_after=2), 1), (Behaviour(always_status=503), 2)],
    ids=["mismatch", "backend-error"],
)
def test_verify_precision_changes_nothing_unless_the_check_passes(
    stack_repo, capsys, behaviour, expected
):
    before = (stack_repo / "Pulumi.prod.yaml").read_bytes()
    with OpenAIServer() as nvidia, OpenAIServer(behaviour) as ascend:
        assert verify(stack_repo, nvidia.url, ascend.url, "--retries", "1") == expected
    assert (stack_repo / "Pulumi.prod.yaml").read_bytes() == before
    assert "verifiedAscendImage unchanged in Pulumi.prod.yaml" in capsys.readouterr().err


def test_verify_precision_uses_the_stacks_check_settings(stack_repo):
    """The stack allows divergence after 8 tokens; exact mode would fail this Ascend."""
    set_config_values(
        stack_repo,
        "prod",
        {"precisionCheck": {"mode": "prefix", "prefixLength": 8, "prefixUnit": "tokens"}},
    )
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(diverge_after=8)) as ascend:
        assert verify(stack_repo, nvidia.url, ascend.url) == 0
        assert verify(stack_repo, nvidia.url, ascend.url, "--mode", "exact") == 1
    assert all(r["logprobs"] == 1 for r in ascend.requests[:24])


def test_verify_precision_runs_the_stacks_topk_mode_with_its_baseline(stack_repo):
    """Ascend flips near-ties (within the top-2) on 8 prompts: topk with the baseline
    passes it, sending each prompt twice; exact mode does not."""
    set_config_values(stack_repo, "prod", {"precisionCheck": {"mode": "topk", "baseline": True}})
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(swap_rate=0.25)) as ascend:
        assert verify(stack_repo, nvidia.url, ascend.url) == 0
        assert len(ascend.requests) == 48 and {r["logprobs"] for r in ascend.requests} == {5}
        assert verify(stack_repo, nvidia.url, ascend.url, "--mode", "exact") == 1
    assert read_config(stack_repo, "prod")[VERIFIED] == NEW_NPU


ORACLE = {p.prompt: p.answers[0] for p in load_prompts(None, "accuracy")}


@pytest.mark.parametrize(("flags", "expected"), [((), 2), (("--allow-low-threshold",), 0)])
def test_verify_precision_refuses_a_lax_accuracy_tolerance(stack_repo, capsys, flags, expected):
    set_config_values(
        stack_repo, "prod", {"precisionCheck": {"mode": "accuracy", "accuracyTolerance": 20}}
    )
    right = Behaviour(answers=ORACLE)
    with OpenAIServer(right) as nvidia, OpenAIServer(right) as ascend:
        assert verify(stack_repo, nvidia.url, ascend.url, *flags) == expected
    err = capsys.readouterr().err
    lax = "precisionCheck.accuracyTolerance 20 points is above the 10-point ceiling"
    if expected:
        assert nvidia.requests == [] and f"error: {lax} for recording" in err
    else:
        assert f"warning: --allow-low-threshold: recording with {lax}" in err
        assert len(ascend.requests) == 100
        assert read_config(stack_repo, "prod")[VERIFIED] == NEW_NPU


def test_verify_precision_with_an_invalid_stack_is_exit_2(stack_repo, capsys):
    set_config_values(stack_repo, "prod", {"ascendWeight": "abc"})
    assert verify(stack_repo, "http://127.0.0.1:9", "http://127.0.0.1:9") == 2
    assert "dualstack-inference:ascendWeight = 'abc'" in capsys.readouterr().err


# --- a real Pushgateway (Debian's prometheus-pushgateway) ---------------------------------


@pytest.fixture
def pushgateway():
    """prometheus-pushgateway on 127.0.0.1:<random port>, in memory; stopped by the test and
    bounded by the test process (tests/support/pushgateway_server.py)."""
    try:
        with pushgateway_server() as (url, _pid):
            yield url
    except Unavailable as exc:
        pytest.skip(str(exc))


def scraped(gateway: str, name: str) -> dict[str, float]:
    """`{labels: value}` of one metric as Prometheus would scrape it from the gateway."""
    text = urllib.request.urlopen(f"{gateway}/metrics", timeout=5).read().decode()
    return {m[1]: float(m[2]) for m in re.finditer(rf"^{name}\{{(.*)\}} (\S+)$", text, re.M)}


def test_push_reaches_a_real_pushgateway_and_replaces_the_previous_result(pushgateway, capsys):
    push = ("--pushgateway", pushgateway, "--ascend-image", NEW_NPU, *FAST)
    push += ("--nvidia-image", "registry/inference-service:v1.2.4-cuda")
    push += ("--push-label", "namespace=inference")
    labels = (
        f'ascend_image="{NEW_NPU}",instance="",job="precision_check",mode="exact",'
        'namespace="inference",nvidia_image="registry/inference-service:v1.2.4-cuda"'
    )
    diverging = Behaviour(diverge_after=1)
    with OpenAIServer() as nvidia, OpenAIServer() as twin, OpenAIServer(diverging) as ascend:
        assert main(check(nvidia.url, twin.url, *push)) == 0
        assert scraped(pushgateway, PRECISION_PASSED) == {labels: 1.0}
        assert scraped(pushgateway, "precision_check_match_ratio") == {labels: 1.0}
        assert main(check(nvidia.url, ascend.url, *push)) == 1
    assert scraped(pushgateway, PRECISION_PASSED) == {labels: 0.0}
    assert scraped(pushgateway, "precision_check_mismatches") == {labels: 24.0}
    assert scraped(pushgateway, "precision_check_completed") == {labels: 1.0}
    assert f"pushed {PRECISION_PASSED}=0 to {pushgateway}/metrics/job@base64/" in (
        capsys.readouterr().out
    )


def test_a_failed_check_that_could_not_complete_pushes_passed_0(pushgateway):
    with OpenAIServer() as nvidia:
        push = ("--retries", "0", "--pushgateway", pushgateway, "--ascend-image", NEW_NPU)
        code = main(check(nvidia.url, refused_url(), *push))
    assert code == 2
    assert set(scraped(pushgateway, PRECISION_PASSED).values()) == {0.0}
    assert set(scraped(pushgateway, "precision_check_completed").values()) == {0.0}


def test_the_baseline_and_accuracy_numbers_reach_a_real_pushgateway(pushgateway):
    push = ("--pushgateway", pushgateway, "--ascend-image", NEW_NPU, *FAST)
    labels = (
        f'ascend_image="{NEW_NPU}",hardware="{{}}",instance="",job="precision_check",mode="{{}}"'
    )
    unstable = Behaviour(unstable_rate=0.25)  # 7 of 24 prompts change on the second request
    with OpenAIServer() as nvidia, OpenAIServer(unstable) as ascend:
        assert main(check(nvidia.url, ascend.url, *push, "--mode", "topk", "--baseline")) == 0
    within = scraped(pushgateway, "precision_check_within_match_ratio")
    assert within == {labels.format("ascend", "topk"): 1.0, labels.format("nvidia", "topk"): 1.0}
    assert set(scraped(pushgateway, "precision_check_diverged").values()) == {7.0}
    right = Behaviour(answers=ORACLE)
    wrong = Behaviour(answers=ORACLE, wrong=lambda text: text in list(ORACLE)[::5])
    with OpenAIServer(right) as nvidia, OpenAIServer(wrong) as ascend:
        assert main(check(nvidia.url, ascend.url, *push, "--mode", "accuracy")) == 1
    accuracy = scraped(pushgateway, "precision_check_accuracy_ratio")
    assert accuracy == {
        labels.format("ascend", "accuracy"): 0.8,
        labels.format("nvidia", "accuracy"): 1.0,
    }
    assert set(scraped(pushgateway, PRECISION_PASSED).values()) == {0.0}
    assert set(scraped(pushgateway, "precision_check_inconclusive").values()) == {0.0}
    assert scraped(pushgateway, "precision_check_within_match_ratio") == {}  # group replaced


def test_an_unreachable_pushgateway_is_exit_2_even_after_a_pass(capsys):
    gateway = refused_url()
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        push = ("--pushgateway", gateway, "--ascend-image", NEW_NPU, *FAST)
        code = main(check(nvidia.url, ascend.url, *push))
    out, err = capsys.readouterr()
    assert code == 2 and out.startswith("precision check PASS")
    assert err.startswith(f"error: push to {gateway}/metrics/job@base64/") and err.count("\n") == 1
    assert "Connection refused" in err


# --- guards found by a fresh-user trial ---------------------------------------------------


def test_verify_precision_refuses_the_same_server_twice(stack_repo, capsys):
    before = (stack_repo / "Pulumi.prod.yaml").read_bytes()
    with OpenAIServer() as server:
        assert verify(stack_repo, server.url, server.url + "/v1/") == 2
    assert server.requests == []
    assert (stack_repo / "Pulumi.prod.yaml").read_bytes() == before
    err = capsys.readouterr().err
    assert err.startswith(f"error: --nvidia and --ascend are the same server ({server.url}): ")


@pytest.mark.parametrize(
    ("stack", "flags", "cause"),
    [
        ({}, ("--min-match-rate", "0"), "--min-match-rate 0: must be above 0"),
        ({}, ("--min-match-rate", "50"), "--min-match-rate 50 % is below the 90 % floor"),
        ({"minMatchRate": 80}, (), "precisionCheck.minMatchRate 80 % is below the 90 % floor"),
    ],
)
def test_verify_precision_refuses_a_low_threshold(stack_repo, capsys, stack, flags, cause):
    """Everything matches here: the threshold alone must stop the recording."""
    if stack:
        set_config_values(stack_repo, "prod", {"precisionCheck": stack})
    before = (stack_repo / "Pulumi.prod.yaml").read_bytes()
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        assert verify(stack_repo, nvidia.url, ascend.url, *flags) == 2
    assert nvidia.requests == [] == ascend.requests
    assert (stack_repo / "Pulumi.prod.yaml").read_bytes() == before
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and cause in err


def test_verify_precision_records_below_the_floor_only_when_allowed(stack_repo, capsys):
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        flags = ("--min-match-rate", "50", "--allow-low-threshold")
        assert verify(stack_repo, nvidia.url, ascend.url, *flags) == 0
    out, err = capsys.readouterr()
    assert f"recording verifiedAscendImage = {NEW_NPU}" in out
    assert "warning: --allow-low-threshold: recording with --min-match-rate 50 %" in err
    assert "below the 90 % floor" in err
    assert read_config(stack_repo, "prod")[VERIFIED] == NEW_NPU


def test_verify_precision_into_a_closed_pipe_leaves_the_file_unchanged(stack_repo):
    """`dualstack verify-precision ... | head -0`: the reader is gone before the summary is
    written. The command fails in one line without a traceback and records nothing."""
    before = (stack_repo / "Pulumi.prod.yaml").read_bytes()
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        command = [sys.executable, "-m", "dualstack", "verify-precision", "--stack", "prod"]
        command += ["--nvidia", nvidia.url, "--ascend", ascend.url, *FAST]
        process = subprocess.Popen(
            command,
            cwd=stack_repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        )
        process.stdout.close()  # the reader exits at once, like `head -0`
        err = process.stderr.read().decode()
        code = process.wait(timeout=60)
    assert code == 2
    assert (
        err.splitlines()[-1] == "error: output closed (broken pipe); verifiedAscendImage unchanged"
    )
    assert "Traceback" not in err and "Exception ignored" not in err
    assert (stack_repo / "Pulumi.prod.yaml").read_bytes() == before


def test_precision_check_into_a_closed_pipe_is_one_line(tmp_path):
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        process = subprocess.Popen(
            [sys.executable, "-m", "dualstack", *check(nvidia.url, ascend.url, *FAST)],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        )
        process.stdout.close()
        err = process.stderr.read().decode()
        code = process.wait(timeout=60)
    assert (code, err) == (2, "error: output closed (broken pipe)\n")


def test_verify_precision_help_names_the_stack_settings_as_defaults(tmp_path):
    text = " ".join(dualstack("verify-precision", "--help", cwd=tmp_path).stdout.split())
    assert "(default: exact)" not in text and "(default: 100.0)" not in text
    assert "comparison mode (default: the stack's precisionCheck.mode)" in text
    keys = ("mode", "minMatchRate", "logprobTolerance", "topK", "baseline", "baselineMargin")
    for key in (*keys, "accuracyTolerance", "timeoutSeconds", "prompts"):
        assert f"(default: the stack's precisionCheck.{key}" in text
    assert "--backoff S seconds before the first retry, doubling (default: 0.5)" in text
    standalone = " ".join(dualstack("precision-check", "--help", cwd=tmp_path).stdout.split())
    assert "comparison mode (default: exact)" in standalone


def test_a_prompts_file_written_as_one_json_array_is_named_with_the_way_out(tmp_path):
    """A script's `json.dump(prompts, f)`: one JSON array, not JSON lines. One line says what
    the file is and how to give it to the checker; both ways then run the check."""
    prompts = ["What is 2 + 2?", "Name the capital of France.", "Translate 'cat' into German."]
    array = tmp_path / "prompts.json"
    array.write_text(json.dumps(prompts, indent=2), encoding="utf-8")
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        refused = dualstack(*check(nvidia.url, ascend.url, "--prompts", str(array)), cwd=tmp_path)
        assert not nvidia.requests  # refused before any prompt was sent
        assert refused.returncode == 2
        assert refused.stderr == (
            f"error: --prompts {array}: prompts.json is one JSON array, but the checker reads "
            'JSON lines: one prompt per line, a string or {"id", "prompt" or "messages", '
            f"\"answer\"}}; convert it with `jq -c '.[]' {array} > prompts.jsonl`, or name it "
            ".yaml (a JSON array is a YAML list)\n"
        )
        lines = tmp_path / "prompts.jsonl"  # what `jq -c '.[]'` writes
        lines.write_text("".join(json.dumps(p) + "\n" for p in prompts), encoding="utf-8")
        renamed = tmp_path / "prompts.yaml"
        renamed.write_text(array.read_text(encoding="utf-8"), encoding="utf-8")
        for way in (lines, renamed):
            done = dualstack(*check(nvidia.url, ascend.url, "--prompts", str(way)), cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            assert done.stdout.startswith("precision check PASS: 3/3 prompts match")


def test_verify_precision_names_a_json_array_prompts_file_too(git_repo, tmp_path, capsys):
    array = tmp_path / "prompts.json"
    array.write_text('["What is 2 + 2?", "Name a prime."]', encoding="utf-8")
    before = (git_repo / "Pulumi.prod.yaml").read_bytes()
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        argv = ["--nvidia", nvidia.url, "--ascend", ascend.url, "--prompts", str(array)]
        assert main(["-C", str(git_repo), "verify-precision", "-s", "prod", *argv]) == 2
        assert not nvidia.requests
    err = capsys.readouterr().err
    assert err.startswith(f"error: --prompts {array}: prompts.json is one JSON array") and (
        err.count("\n") == 1
    )
    assert (git_repo / "Pulumi.prod.yaml").read_bytes() == before
