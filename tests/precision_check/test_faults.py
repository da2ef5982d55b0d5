"""Bad inputs and faults against the checker, one table per class of failure (issue 34).

Each case runs the public seam (`precision_check.main`, `Options`, `load_prompts`) against
real local fakes: `tests.support.fault_servers` (127.0.0.1 servers that drip, stream forever,
send huge or deeply nested JSON, NaN logprobs, secrets in error bodies), FIFOs and devices.
The classes: wrong acceptances (a bad value taken, a bad answer passed), hangs (past a stated
bound), tracebacks (anything but one `error:` line), secrets echoed.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

import precision_check as checker
from precision_check.cli import build_parser
from tests.support.fault_servers import (
    FaultServer,
    answer,
    drip,
    drip_headers,
    endless,
    huge,
    silent,
)
from tests.support.param_ids import plain

CLOSED = ("--nvidia", "http://127.0.0.1:9", "--ascend", "http://127.0.0.1:10")
ONE = {"id": "p1", "prompt": "Say one word."}
QUICK = ("--retries", "0", "--backoff", "0", "--concurrency", "1")


def completion(text="one", logprobs=(-0.1,), tokens=None, top=None) -> dict:
    """A completions answer with its per-token logprobs (NaN kept: json writes `NaN`)."""
    tokens = tokens or [text] * len(logprobs)
    body = {"tokens": list(tokens), "token_logprobs": list(logprobs)}
    if top is not None:
        body["top_logprobs"] = top
    return {"choices": [{"text": "".join(tokens), "logprobs": body}]}


@pytest.fixture
def one_prompt(tmp_path) -> Path:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(ONE) + "\n", encoding="utf-8")
    return path


def main(capsys, *argv: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `precision_check.main(argv)`; argparse's exit too."""
    try:
        code = checker.main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> None:
    """What every refusal looks like: no traceback, no internal error, one `error:` line."""
    assert "Traceback" not in err and "internal error" not in err, err
    assert [line for line in err.splitlines() if line.startswith("error: ")], err


# --- wrong acceptances: the strict parser of every numeric flag ---------------------------

COUNT_FLAGS = ("--max-tokens", "--seed", "--prefix-length", "--top-k", "--concurrency")
COUNT_FLAGS += ("--retries",)
AMOUNT_FLAGS = ("--min-match-rate", "--tolerance", "--baseline-margin")
AMOUNT_FLAGS += ("--accuracy-tolerance", "--timeout", "--backoff", "--deadline")
BAD_COUNTS = (
    "1_0",
    " 5",
    "5 ",
    "+8",
    "08",
    "٨",
    "1e2",
    "inf",
    "nan",
    "-1",
    "8.0",
    "",
    "0x10",
    "５",
    "1 0",
    "\t5",
    "5\n",
    "9" * 25,
    "²",
    "००७",
)
BAD_AMOUNTS = (
    "1_0",
    " 5",
    "5 ",
    "+8",
    "08",
    "٨",
    "1e2",
    "inf",
    "nan",
    "-1",
    "Infinity",
    ".5",
    "5.",
    "1,5",
    "0x1p3",
    "",
    "-0",
    "1" * 60,
    "٠.٥",
    "1.5e-3",
)


@pytest.mark.parametrize("value", BAD_COUNTS, ids=plain)
@pytest.mark.parametrize("name", COUNT_FLAGS)
def test_wrong_acceptance_count_flag(capsys, name, value):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([*CLOSED, name, value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.splitlines()[-1].startswith(f"precision_check: error: argument {name}: "), err


@pytest.mark.parametrize("value", BAD_AMOUNTS, ids=plain)
@pytest.mark.parametrize("name", AMOUNT_FLAGS)
def test_wrong_acceptance_amount_flag(capsys, name, value):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([*CLOSED, name, value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.splitlines()[-1].startswith(f"precision_check: error: argument {name}: "), err


@pytest.mark.parametrize(
    "argv",
    [
        ("--max-tokens", "64", "--retries", "0", "--timeout", "0.5", "--tolerance", "0.01"),
        ("--seed", "0", "--min-match-rate", "99.5", "--deadline", "600"),
        ("--top-k", "20", "--backoff", "0", "--baseline-margin", "0"),
    ],
)
def test_plain_decimal_flags_are_read(argv):
    args = build_parser().parse_args([*CLOSED, *argv])
    for name, text in zip(argv[::2], argv[1::2], strict=True):
        assert getattr(args, name[2:].replace("-", "_")) == float(text)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timeout", float("inf")),
        ("deadline", float("inf")),
        ("backoff", float("inf")),
        ("tolerance", float("inf")),
        ("min_match_rate", float("nan")),
        ("accuracy_tolerance", float("nan")),
        ("baseline_margin", float("nan")),
        ("timeout", float("nan")),
        ("deadline", 1e309),
        ("backoff", float("nan")),
    ],
)
def test_wrong_acceptance_non_finite_option(field, value):
    with pytest.raises(checker.CheckError, match=f"--{field.replace('_', '-')} "):
        checker.Options(nvidia="http://127.0.0.1:9", ascend="http://127.0.0.1:10", **{field: value})


# --- wrong acceptances: a backend compared with itself -------------------------------------

SAME = [
    "http://127.1:18001",
    "http://0x7f000001:18001",
    "http://2130706433:18001",
    "http://[::ffff:127.0.0.1]:18001",
    "http://0.0.0.0:18001",
    "http://127.000.000.001:18001",
    "http://127.0.0.1:18001/v1/v1",
    "http://[::1]:18001",
    "http://localhost:18001//v1",
    "http://127.0.0.1:18001/./v1/",
    "http://127.0.0.1:18001/%76%31",
    "http://[::]:18001",
    "http://0:18001",
    "http://017700000001:18001",
    "http://127.0.0.1:18001/v1/../v1",
    "http://LOCALHOST:18001",
    "http://127.0.0.1:018001",
    "http://127.0.0.2:18001",
    "http://0177.0.0.1:18001/",
    "http://[0:0:0:0:0:ffff:7f00:1]:18001/v1",
]


@pytest.mark.parametrize("ascend", SAME)
def test_wrong_acceptance_same_server(ascend):
    with pytest.raises(checker.CheckError, match="are the same server"):
        checker.Options(nvidia="http://127.0.0.1:18001", ascend=ascend)


@pytest.mark.parametrize(
    "ascend", ["http://127.0.0.1:18002", "http://127.0.0.1:18001/ascend", "https://127.0.0.1:18001"]
)
def test_different_servers_are_allowed(ascend):
    assert checker.Options(nvidia="http://127.0.0.1:18001", ascend=ascend).ascend == ascend


# --- wrong acceptances: NaN and infinite logprobs never pass -------------------------------

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("nvidia", "ascend"),
    [
        ((-0.1,), (NAN,)),
        ((NAN,), (-0.1,)),
        ((NAN,), (NAN,)),
        ((-0.1,), (INF,)),
        ((-0.1,), (-INF,)),
        ((-INF,), (-INF,)),
        ((-0.1, -0.2), (-0.1, NAN)),
        ((NAN, NAN), (NAN, NAN)),
        ((-0.1, -0.2, -0.3), (-0.1, -0.2, INF)),
        ((INF,), (INF,)),
    ],
    ids=str,
)
def test_wrong_acceptance_non_finite_logprobs(capsys, one_prompt, nvidia, ascend):
    with (
        FaultServer(answer(completion(logprobs=nvidia))) as gpu,
        FaultServer(answer(completion(logprobs=ascend))) as npu,
    ):
        code, out, err = main(
            capsys, "--nvidia", gpu.url, "--ascend", npu.url, "--prompts", str(one_prompt),
            "--mode", "logprobs", *QUICK,
        )  # fmt: skip
    assert code == checker.EXIT_MISMATCH, (out, err)
    assert out.startswith("precision check MISMATCH: 0/1 prompts match in logprobs mode")


@pytest.mark.parametrize(
    "top",
    [
        [{"one": NAN, "two": -1.0}],
        [{"two": -1.0, "one": NAN}],
        [[{"token": "one", "logprob": NAN}]],
    ],
    ids=str,
)
def test_wrong_acceptance_nan_alternatives(capsys, one_prompt, top):
    good = completion(tokens=["one"], top=[{"one": -0.1, "two": -1.0}])
    bad = completion(tokens=["two"], top=top)
    with FaultServer(answer(good)) as gpu, FaultServer(answer(bad)) as npu:
        code, out, _err = main(
            capsys, "--nvidia", gpu.url, "--ascend", npu.url, "--prompts", str(one_prompt),
            "--mode", "topk", "--top-k", "2", *QUICK,
        )  # fmt: skip
    assert code != checker.EXIT_PASS, out


# --- hangs: every request ends within its --timeout, whatever the server does --------------

BOUND = 4.0
"""Seconds a run with `--timeout 1` may take against a server that never finishes."""
HANGS = {
    "drip-body-0.1s": drip(b'{"choices": [{"text": "' + b"a" * 400 + b'"}]}', 0.1),
    "drip-body-0.3s": drip(b" " * 100 + b"{}", 0.3),
    "drip-body-0.5s-with-length": drip(b" " * 50, 0.5, length=50),
    "drip-headers-0.1s": drip_headers(0.1),
    "drip-headers-0.5s": drip_headers(0.5),
    "silent": silent(),
    "drip-0.9s": drip(b" " * 20, 0.9),
}


@pytest.mark.parametrize("script", HANGS.values(), ids=HANGS.keys())
def test_hang_backend(capsys, one_prompt, script):
    with FaultServer(answer(completion())) as gpu, FaultServer(script) as npu:
        started = time.monotonic()
        code, _out, err = main(
            capsys, "--nvidia", gpu.url, "--ascend", npu.url, "--prompts", str(one_prompt),
            "--timeout", "1", "--deadline", "60", *QUICK,
        )  # fmt: skip
        elapsed = time.monotonic() - started
    assert elapsed < BOUND, err
    assert code == checker.EXIT_ERROR
    one_error_line(err)


BIG = {
    "endless-chunked": endless(b" " * 65536),
    "endless-no-length": endless(b" " * 65536, chunked=False),
    "endless-brackets": endless(b"[" * 65536),
    "huge-40MiB": huge(40 * 1024 * 1024),
    "huge-9MiB": huge(9 * 1024 * 1024, b"["),
}


@pytest.mark.parametrize("script", BIG.values(), ids=BIG.keys())
def test_hang_unbounded_answer(capsys, one_prompt, script):
    """An answer above the size cap is refused without reading the rest."""
    with FaultServer(answer(completion())) as gpu, FaultServer(script) as npu:
        started = time.monotonic()
        code, _out, err = main(
            capsys, "--nvidia", gpu.url, "--ascend", npu.url, "--prompts", str(one_prompt),
            "--timeout", "20", *QUICK,
        )  # fmt: skip
        elapsed = time.monotonic() - started
    assert code == checker.EXIT_ERROR
    assert "larger than" in err, err
    assert elapsed < BOUND
    one_error_line(err)


# --- tracebacks: malformed answers and headers are one line --------------------------------

DEEP = {
    "arrays-1000": b"[" * 1000 + b"]" * 1000,
    "arrays-100000": b"[" * 100000 + b"]" * 100000,
    "objects-5000": b'{"a":' * 5000 + b"1" + b"}" * 5000,
    "in-choices-3000": b'{"choices": [{"text": ' + b"[" * 3000 + b"]" * 3000 + b"}]}",
    "in-logprobs-3000": b'{"choices": [{"text": "a", "logprobs": ' + b"[" * 3000 + b"}]}",
    "unclosed-200000": b"[" * 200000,
    "mixed-4000": b'[{"a":' * 2000 + b"0" + b"}]" * 2000,
}


@pytest.mark.parametrize("body", DEEP.values(), ids=DEEP.keys())
def test_traceback_deep_json_answer(capsys, one_prompt, body):
    with FaultServer(answer(completion())) as gpu, FaultServer(answer(body)) as npu:
        code, _out, err = main(
            capsys, "--nvidia", gpu.url, "--ascend", npu.url, "--prompts", str(one_prompt),
            *QUICK,
        )  # fmt: skip
    assert code == checker.EXIT_ERROR
    one_error_line(err)


RETRY_AFTER = ["²", "٣", "-1", "1.5", "1e9", "inf", "nan", "Fri, 31 Dec 1999 23:59:59 GMT"]
RETRY_AFTER += ["", " ", "9" * 30, "0x10", "١٠", "3 seconds", "NaN", "+2"]


@pytest.mark.parametrize("value", RETRY_AFTER, ids=plain)
def test_traceback_retry_after(capsys, one_prompt, value):
    """A junk Retry-After is retried on the usual backoff: one line, no traceback, no wait."""
    busy = answer({"error": "busy"}, 503, [("Retry-After", value)])
    with FaultServer(answer(completion())) as gpu, FaultServer(busy) as npu:
        started = time.monotonic()
        code, _out, err = main(
            capsys, "--nvidia", gpu.url, "--ascend", npu.url, "--prompts", str(one_prompt),
            "--retries", "1", "--backoff", "0", "--concurrency", "1",
        )  # fmt: skip
        elapsed = time.monotonic() - started
    assert code == checker.EXIT_ERROR
    assert "HTTP 503" in err and elapsed < BOUND, err
    one_error_line(err)


# --- secrets echoed: userinfo and tokens in a backend's error body -------------------------

SECRET = "S3cr3tV4lue0123456789"
BODIES = [
    f'{{"error": "invalid api_key={SECRET}"}}',
    f'{{"error": {{"message": "bad request", "token": "{SECRET}"}}}}',
    f"echo: Authorization: Bearer {SECRET}",
    f"password={SECRET}&user=x",
    f"glpat-{SECRET}",
    f"ghp_{SECRET}",
    f'{{"detail": "Basic {SECRET}"}}',
    f"<html>access_token: {SECRET}</html>",
]


@pytest.mark.parametrize("status", [400, 500])
@pytest.mark.parametrize("body", BODIES)
def test_secret_in_error_body(capsys, one_prompt, body, status):
    with FaultServer(answer(completion())) as gpu, FaultServer(answer(body, status)) as npu:
        code, out, err = main(
            capsys, "--nvidia", gpu.url, "--ascend", npu.url, "--prompts", str(one_prompt),
            *QUICK,
        )  # fmt: skip
    assert code == checker.EXIT_ERROR
    assert SECRET not in out + err, err
    one_error_line(err)


@pytest.mark.parametrize(
    "flag", ["--nvidia", "--ascend", "--pushgateway"], ids=["nvidia", "ascend", "pushgateway"]
)
@pytest.mark.parametrize("userinfo", [f"user:{SECRET}", SECRET, f"{SECRET}:"])
def test_secret_url_userinfo(capsys, tmp_path, one_prompt, flag, userinfo):
    with FaultServer(answer(completion())) as gpu, FaultServer(answer(completion())) as npu:
        urls = {"--nvidia": gpu.url, "--ascend": npu.url, "--pushgateway": "http://127.0.0.1:9"}
        urls[flag] = urls[flag].replace("://", f"://{userinfo}@")
        report = tmp_path / "report.json"
        code, out, err = main(
            capsys, *(arg for item in urls.items() for arg in item), "--prompts",
            str(one_prompt), "--ascend-image", "npu:1", "--json", str(report), *QUICK,
        )  # fmt: skip
    assert code == checker.EXIT_ERROR
    written = report.read_text() if report.exists() else ""
    assert SECRET not in out + err + written, out + err


# --- hangs and tracebacks: the prompts file ------------------------------------------------


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.jsonl"
    os.mkfifo(path)
    return path


def _unix_socket(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    return path


def _write(name: str, data: bytes):
    def make(tmp_path: Path) -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    return make


def _link_to(target):
    def make(tmp_path: Path) -> Path:
        link = tmp_path / "link.jsonl"
        link.symlink_to(target(tmp_path) if callable(target) else target)
        return link

    return make


PROMPT_FILES = {
    "fifo": _fifo,
    "dev-zero": lambda _tmp: Path("/dev/zero"),
    "dev-null": lambda _tmp: Path("/dev/null"),
    "dev-urandom": lambda _tmp: Path("/dev/urandom"),
    "folder": lambda tmp: tmp,
    "unix-socket": _unix_socket,
    "link-to-fifo": _link_to(_fifo),
    "link-to-dev-zero": _link_to(Path("/dev/zero")),
    "17MiB": _write("big.jsonl", b'"a"\n' + b" " * (17 * 1024 * 1024)),
    "deep-json-line": _write("deep.jsonl", b"[" * 100000 + b"]" * 100000 + b"\n"),
    "deep-object-line": _write("obj.jsonl", b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"\n"),
    "deep-yaml": _write("deep.yaml", b"[" * 100000 + b"]" * 100000 + b"\n"),
    "deep-yaml-block": _write(
        "block.yaml", "".join("  " * i + "- \n" for i in range(3000)).encode()
    ),
    "not-utf8": _write("latin.jsonl", b'"caf\xe9"\n'),
    "nan-line": _write("nan.jsonl", b"NaN\n"),
    "missing": lambda tmp: tmp / "absent.jsonl",
}


@pytest.mark.parametrize("make", PROMPT_FILES.values(), ids=PROMPT_FILES.keys())
def test_hang_prompts_file(tmp_path, make):
    """Each refused in one CheckError within a second: no block, no MemoryError."""
    path = make(tmp_path)
    outcome: list[BaseException | object] = []
    reader = threading.Thread(target=lambda: outcome.append(_load(path)), daemon=True)
    reader.start()
    reader.join(timeout=3)
    hung = reader.is_alive()
    if hung and path.name in ("prompts.jsonl", "link.jsonl"):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # release the blocked reader
    assert not hung, "load_prompts hung"
    assert isinstance(outcome[0], checker.CheckError), outcome


def _load(path: Path) -> BaseException | object:
    try:
        return checker.load_prompts(path)
    except BaseException as exc:  # the test reports whatever escaped
        return exc


def test_unresolved_servers_are_compared_as_text_without_a_resolver(monkeypatch):
    """`servers.RESOLVE` off (a stack's render: cluster-local names): no lookup at all, the
    same host text is still the same server, and every other check still runs."""

    def no_resolver(*args, **kwargs):
        raise AssertionError(f"getaddrinfo{args}")

    monkeypatch.setattr(checker.servers.socket, "getaddrinfo", no_resolver)
    token = checker.servers.RESOLVE.set(False)
    try:
        options = checker.Options(
            nvidia="http://svc-nvidia.ns:8000", ascend="http://svc-ascend.ns:8000"
        )
        assert options.ascend == "http://svc-ascend.ns:8000"
        with pytest.raises(checker.CheckError, match="are the same server"):
            checker.Options(nvidia="http://svc.ns:8000", ascend="http://SVC.ns.:8000/v1")
        with pytest.raises(checker.CheckError, match="--top-k 0"):
            checker.Options(nvidia="http://a.ns:8000", ascend="http://b.ns:8000", top_k=0)
    finally:
        checker.servers.RESOLVE.reset(token)
    with pytest.raises(AssertionError, match="getaddrinfo"):  # on again: the resolver is asked
        checker.Options(nvidia="http://svc-nvidia.ns:8000", ascend="http://svc-ascend.ns:8000")
