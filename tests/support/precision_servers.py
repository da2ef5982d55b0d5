"""A small OpenAI-compatible test server (stdlib HTTP, 127.0.0.1, random port) for the
precision check, with the numeric drift and the faults a real backend shows.

Answers are deterministic: at every position a prompt has a ranked list of `TOP_N` candidate
tokens (`ranking`) drawn from a hash of its text, and the answer is the top candidate of each
(greedy decoding), so two servers with the same `Behaviour` answer alike. Drift is modelled
the way fp16/bf16 differences show on real hardware (vllm-project/vllm#7779): a near-tie
flips, so one position takes the candidate of rank `swap_rank` instead of the first
(`swap_rate` of the prompts), and that server's own ranking there puts its choice first. A
nondeterministic server (`unstable_rate`) does the same on every second request for a
prompt. `diverge_after`, `truncate_after`, `logprob_noise`, the answer oracle (`answers`,
`wrong`) and the faults make a server differ in other known ways. Use it as a context
manager; it stops itself.
"""

from __future__ import annotations

import functools
import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import precision_check as checker

WORDS = (
    "the",
    "model",
    "answers",
    "every",
    "prompt",
    "with",
    "tokens",
    "that",
    "match",
    "on",
    "both",
    "kinds",
    "of",
    "hardware",
    "when",
    "decoding",
    "is",
    "greedy",
    "and",
    "stable",
)
HANG_LIMIT = 60.0
"""Seconds a hanging handler waits at most; it ends at once when the server stops."""
TOP_N = 10
"""Candidates ranked at every position (the most a request gets as top logprobs)."""
STEP = 7
"""Stride through WORDS between ranks: coprime to len(WORDS), so the TOP_N are distinct."""


@dataclass
class Behaviour:
    """How the server answers. Latency is in seconds; `diverge_after` tokens stay identical,
    then the answer differs outside any top-k (only for prompts `diverges(prompt_text)`
    selects). `swap_rate` of the prompts (chosen by `selected`) take the candidate of rank
    `swap_rank` at token `swap_at`; `unstable_rate` of them do so with `unstable_rank` on
    every second request for the prompt. `truncate_after` cuts the answers `truncates`
    selects to that many tokens. `answers` maps prompt texts to the exact answer given
    (the items `wrong` selects get `WRONG` instead)."""

    latency: float = 0.0
    diverge_after: int | None = None
    diverges: Callable[[str], bool] = lambda _text: True
    swap_rate: float = 0.0
    swap_at: int = 2
    swap_rank: int = 2
    unstable_rate: float = 0.0
    unstable_rank: int = 2
    truncate_after: int | None = None
    truncates: Callable[[str], bool] = lambda _text: True
    answers: Mapping[str, str] | None = None
    wrong: Callable[[str], bool] = lambda _text: False
    logprob_noise: float = 0.0
    fail_first: int = 0
    fail_status: int = 503
    always_status: int | None = None
    hang: bool = False
    malformed: bool = False
    empty: bool = False
    logprobs: bool = True
    top_logprobs: bool = True


WRONG = "unknown"
"""What the answer oracle says for the items `Behaviour.wrong` selects."""


def selected(text: str, rate: float, salt: str) -> bool:
    """True for about `rate` of all prompt texts: a hash of the text and `salt` read as a
    fraction in [0, 1) is below `rate`. Deterministic, so a test can count the prompts a
    rate selects."""
    digest = hashlib.sha256(f"{salt}/{text}".encode()).digest()
    return int.from_bytes(digest[:8]) / 2**64 < rate


def ranking(text: str, index: int) -> list[tuple[str, float]]:
    """The TOP_N candidates at token `index` of a prompt's answer, most likely first, each
    ` word` with its logprob: the first -0.05 .. -1.0, each next rank 0.4 lower."""
    return list(_ranking(text, index))


@functools.lru_cache(maxsize=65536)
def _ranking(text: str, index: int) -> tuple[tuple[str, float], ...]:
    # Cached: the server ranks every position of every answer, and hashing them anew on
    # each request costs the benchmark's client measurable time (one process, one GIL).
    digest = _digest(text)
    base = (digest[index % len(digest)] + index) % len(WORDS)
    first = logprob_for(text, index)
    return tuple(
        (" " + WORDS[(base + STEP * rank) % len(WORDS)], round(first - 0.4 * rank, 4))
        for rank in range(TOP_N)
    )


@functools.lru_cache(maxsize=4096)
def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def tokens_for(text: str, count: int) -> list[str]:
    """The deterministic answer tokens of a prompt (` word` each, so text = ''.join): the
    first candidate of every position."""
    return [ranking(text, i)[0][0] for i in range(count)]


def logprob_for(text: str, index: int) -> float:
    """The deterministic logprob of token `index` of a prompt's answer (-0.05 .. -1.0)."""
    digest = hashlib.sha256(f"{text}/{index}".encode()).digest()
    return -round(0.05 + digest[0] / 270, 4)


def take(candidates: Sequence[tuple[str, float]], rank: int) -> list[tuple[str, float]]:
    """The ranking of a server that chose the candidate of `rank` (1-based): that candidate
    first with the best logprob, the others after it in their order, logprobs kept by
    position (a near-tie flipped)."""
    chosen = candidates[rank - 1][0]
    order = [chosen] + [token for token, _ in candidates if token != chosen]
    return [(token, lp) for token, (_, lp) in zip(order, candidates, strict=True)]


class OpenAIServer:
    """`/v1/completions` and `/v1/chat/completions` on 127.0.0.1:<random port>.

    `requests` records every decoded request body; `failures` counts fault answers sent;
    `in_flight` counts requests being answered right now (a hanging one stays in flight
    until the server stops).
    """

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.requests: list[dict[str, Any]] = []
        self.failures = 0
        self.in_flight = 0
        self.seen: dict[str, int] = {}
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL, e.g. `http://127.0.0.1:40123`."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        """(status, body) for one request; applies latency and faults."""
        b = self.behaviour
        chat = path.endswith("/chat/completions")
        text = body["messages"][-1]["content"] if chat else body["prompt"]
        with self._lock:
            self.requests.append(body)
            repeat = self.seen.get(text, 0)
            self.seen[text] = repeat + 1
            fail = b.always_status or (b.fail_status if self.failures < b.fail_first else None)
            if fail:
                self.failures += 1
        if b.latency:
            time.sleep(b.latency)
        if fail:
            return fail, json.dumps({"error": {"message": f"injected {fail}"}}).encode()
        if b.hang:
            with self._lock:
                self.in_flight += 1
            self.stopping.wait(HANG_LIMIT)
            with self._lock:
                self.in_flight -= 1
            return 0, b""  # close without an answer
        if b.malformed:
            return 200, b'{"choices": [{"text": "half an answ'
        positions = self._positions(text, int(body.get("max_tokens", 16)), repeat)
        return 200, json.dumps(self._choice(chat, positions, body)).encode()

    def _positions(self, text: str, count: int, repeat: int) -> list[Any]:
        """The answer as one ranking (a sequence of (token, logprob)) per token, the chosen
        token first in each."""
        b = self.behaviour
        if b.empty:
            return []
        if b.answers is not None and text in b.answers:
            answer = WRONG if b.wrong(text) else b.answers[text]
            return [[(" " + answer, -0.01), (" " + WRONG, -5.0)], [("\n", -0.02)]]
        positions: list[Any] = [_ranking(text, i) for i in range(count)]  # cached tuples
        at = min(b.swap_at, count - 1)
        if selected(text, b.swap_rate, "swap"):
            positions[at] = take(positions[at], b.swap_rank)
        if repeat % 2 and selected(text, b.unstable_rate, "unstable"):
            positions[at] = take(positions[at], b.unstable_rank)
        if b.diverge_after is not None and b.diverges(text):
            for i in range(b.diverge_after, count):
                positions[i] = [(" ascend" + t, lp) for t, lp in positions[i]]
        if b.truncate_after is not None and b.truncates(text):
            positions = positions[: b.truncate_after]
        if b.logprob_noise:
            for i, candidates in enumerate(positions):
                sign = -1 if i % 2 else 1
                positions[i] = [(t, round(lp + sign * b.logprob_noise, 6)) for t, lp in candidates]
        return positions

    def _choice(self, chat: bool, positions: list[Any], body: dict[str, Any]) -> dict[str, Any]:
        """One choice in the shape vLLM returns (OpenAI's): completions `top_logprobs` as
        `{token: logprob}` per position (vLLM adds the chosen token when it is not among
        the k), chat `top_logprobs` as `[{token, logprob, bytes}]`."""
        b = self.behaviour
        with_logprobs = b.logprobs and bool(body.get("logprobs"))
        k = int(body.get("top_logprobs" if chat else "logprobs") or 0)
        tokens = [candidates[0][0] for candidates in positions]
        logprobs = [candidates[0][1] for candidates in positions]
        tops = [candidates[:k] if b.top_logprobs else [] for candidates in positions]
        text = "".join(tokens)
        if chat:
            content = [
                {
                    "token": t,
                    "logprob": v,
                    "bytes": list(t.encode()),
                    "top_logprobs": [
                        {"token": a, "logprob": lp, "bytes": list(a.encode())} for a, lp in top
                    ],
                }
                for t, v, top in zip(tokens, logprobs, tops, strict=True)
            ]
            choice = {"message": {"role": "assistant", "content": text}}
            choice["logprobs"] = {"content": content} if with_logprobs else None
        else:
            top_logprobs = [
                {**dict(top), **({t: v} if k and b.top_logprobs else {})}
                for t, v, top in zip(tokens, logprobs, tops, strict=True)
            ]
            choice = {"text": text}
            choice["logprobs"] = (
                {
                    "tokens": tokens,
                    "token_logprobs": logprobs,
                    "top_logprobs": top_logprobs if k > 1 else None,
                }
                if with_logprobs
                else None
            )
        return {"object": "chat.completion" if chat else "text_completion", "choices": [choice]}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default backlog of 5 stalls concurrent clients

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients that gave up (timeouts, deadline) are expected here


def _handler(owner: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path not in ("/v1/completions", "/v1/chat/completions"):
                self.send_error(404)
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, payload = owner.answer(self.path, body)
            if not status:
                return
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_args: object) -> None:
            pass

    return Handler


def refused_url() -> str:
    """A loopback URL nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


FAST = ("--backoff", "0.01", "--timeout", "5", "--deadline", "20")
"""Checker flags that keep a failing test short."""


def run_main(capsys: Any, tmp_path: Path, nvidia: str, ascend: str, *flags: str) -> Checked:
    """Run the checker's `main` with `FAST`, a JSON and a Markdown report in `tmp_path`;
    returns (exit code, stdout, stderr lines, JSON report or None, Markdown or None)."""
    json_file, markdown_file = tmp_path / "report.json", tmp_path / "report.md"
    argv = ["--nvidia", nvidia, "--ascend", ascend, *FAST, "--json", str(json_file)]
    code = checker.main([*argv, "--markdown", str(markdown_file), *flags])
    out, err = capsys.readouterr()
    data = json.loads(json_file.read_text()) if json_file.exists() else None
    markdown = markdown_file.read_text() if markdown_file.exists() else None
    return Checked(code, out, err.splitlines(), data, markdown)


@dataclass(frozen=True)
class Checked:
    """What one run of the checker left: exit code, stdout, stderr lines, both reports."""

    code: int
    out: str
    err: list[str]
    report: dict[str, Any] | None
    markdown: str | None
