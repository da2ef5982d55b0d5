"""A small OpenAI-compatible test server (stdlib HTTP, 127.0.0.1, random port) for the
precision check, with the faults a real backend shows.

Answers are deterministic: the tokens of a prompt come from a hash of its text, so two
servers with the same `Behaviour` answer alike, and `diverge_after`, `logprob_noise` and the
faults make one of them differ in a known way. Use it as a context manager; it stops itself.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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
HANG_LIMIT = 10.0
"""Seconds a hanging handler waits at most (it also ends when the server stops)."""


@dataclass
class Behaviour:
    """How the server answers. Latency is in seconds; `diverge_after` tokens stay identical,
    then the answer differs (only for prompts `diverges(prompt_text)` selects)."""

    latency: float = 0.0
    diverge_after: int | None = None
    diverges: Callable[[str], bool] = lambda _text: True
    logprob_noise: float = 0.0
    fail_first: int = 0
    fail_status: int = 503
    always_status: int | None = None
    hang: bool = False
    malformed: bool = False
    empty: bool = False
    logprobs: bool = True


def tokens_for(text: str, count: int) -> list[str]:
    """The deterministic answer tokens of a prompt (` word` each, so text = ''.join)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [" " + WORDS[(digest[i % len(digest)] + i) % len(WORDS)] for i in range(count)]


def logprob_for(text: str, index: int) -> float:
    """The deterministic logprob of token `index` of a prompt's answer (-0.05 .. -1.0)."""
    digest = hashlib.sha256(f"{text}/{index}".encode()).digest()
    return -round(0.05 + digest[0] / 270, 4)


class OpenAIServer:
    """`/v1/completions` and `/v1/chat/completions` on 127.0.0.1:<random port>.

    `requests` records every decoded request body; `failures` counts fault answers sent.
    """

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.requests: list[dict[str, Any]] = []
        self.failures = 0
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
        with self._lock:
            self.requests.append(body)
            fail = b.always_status or (b.fail_status if self.failures < b.fail_first else None)
            if fail:
                self.failures += 1
        if b.latency:
            time.sleep(b.latency)
        if fail:
            return fail, json.dumps({"error": {"message": f"injected {fail}"}}).encode()
        if b.hang:
            self.stopping.wait(HANG_LIMIT)
            return 0, b""  # close without an answer
        if b.malformed:
            return 200, b'{"choices": [{"text": "half an answ'
        chat = path.endswith("/chat/completions")
        text = body["messages"][-1]["content"] if chat else body["prompt"]
        tokens = [] if b.empty else tokens_for(text, int(body.get("max_tokens", 16)))
        logprobs = [logprob_for(text, i) for i in range(len(tokens))]
        if b.diverge_after is not None and b.diverges(text):
            tokens[b.diverge_after :] = [" ascend" + t for t in tokens[b.diverge_after :]]
        sign = 1
        for i in range(len(logprobs)):
            logprobs[i] = round(logprobs[i] + sign * b.logprob_noise, 6)
            sign = -sign
        return 200, json.dumps(self._choice(chat, tokens, logprobs, body)).encode()

    def _choice(
        self, chat: bool, tokens: list[str], logprobs: list[float], body: dict[str, Any]
    ) -> dict[str, Any]:
        with_logprobs = self.behaviour.logprobs and bool(body.get("logprobs"))
        text = "".join(tokens)
        if chat:
            content = [{"token": t, "logprob": v} for t, v in zip(tokens, logprobs, strict=True)]
            choice = {"message": {"role": "assistant", "content": text}}
            choice["logprobs"] = {"content": content} if with_logprobs else None
        else:
            choice = {"text": text}
            choice["logprobs"] = (
                {"tokens": tokens, "token_logprobs": logprobs} if with_logprobs else None
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
