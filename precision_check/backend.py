"""One OpenAI-compatible backend: the request, retries, timeouts (the answer's shapes are
read by `shapes`).

Requests follow the OpenAI API reference, which vLLM, vLLM-Ascend and MindIE implement:
completions take `logprobs: k` (the chosen token's logprob and the k most likely), chat takes
`logprobs: true` and `top_logprobs: k`.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from .limits import DeadlineHandler, DeadlineHTTPSHandler, TooLarge, read_capped
from .numbers import parse_count
from .options import ENDPOINTS, CheckError, Options
from .prompts import Prompt
from .redaction import redact
from .shapes import Answer, head, parse_answer

__all__ = [
    "Answer",
    "Backend",
    "DeadlineReached",
    "Retryable",
    "TimedOut",
    "head",
    "parse_answer",
    "request_body",
]

MAX_BACKOFF = 10.0
"""Seconds: the longest wait before one retry, a server's Retry-After included."""
MAX_ANSWER_BYTES = 8 * 1024 * 1024
"""The largest answer read: 64 tokens with 20 alternatives each take about 100 KiB."""
MAX_ERROR_BYTES = 4096
"""The most of an error answer's body read (its first 80 characters are shown)."""


def retry_after(value: str | None) -> float:
    """Seconds a `Retry-After` header asks to wait: its delay-seconds form (RFC 9110 10.2.3),
    else 0 (an HTTP date, `²`, `-1`, `1.5`, junk: retry on the usual backoff)."""
    try:
        return float(parse_count((value or "").strip()))
    except ValueError:
        return 0.0


class Retryable(CheckError):
    """A failure worth retrying: connection refused or lost, HTTP 5xx or 429."""

    def __init__(self, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TimedOut(CheckError):
    """No answer within the request's timeout."""


class DeadlineReached(CheckError):
    """The run's total deadline passed before this request was answered."""


def request_body(options: Options, prompt: Prompt) -> dict[str, Any]:
    """The JSON request: greedy decoding (`temperature: 0`), fixed `max_tokens`, `seed`.

    Raises CheckError when a chat prompt is sent to the completions API.
    """
    body: dict[str, Any] = {"max_tokens": options.max_tokens, "temperature": 0}
    if options.model:
        body["model"] = options.model
    if options.seed is not None:
        body["seed"] = options.seed
    top = options.top_k if options.wants_top else None
    if options.endpoint == "chat":
        body["messages"] = list(prompt.messages or [{"role": "user", "content": prompt.prompt}])
        if options.wants_tokens:
            body["logprobs"] = True
        if top:
            body["top_logprobs"] = top
        return body
    if prompt.prompt is None:
        raise CheckError(f"prompt {prompt.id} has chat messages; use --endpoint chat")
    body["prompt"] = prompt.prompt
    if options.wants_tokens:
        body["logprobs"] = top or 1  # the chosen token's logprob and that many alternatives
    return body


class Backend:
    """One server (`nvidia` or `ascend`); `ask` is called from many threads.

    Every request (connection, headers and body) ends within its timeout, which is capped
    by the time left before `deadline` (a `time.monotonic()` value), and reads at most
    `MAX_ANSWER_BYTES`; `stop` ends retries early once the run is over.
    """

    def __init__(self, name: str, options: Options, stop: threading.Event, deadline: float) -> None:
        base = getattr(options, name).rstrip("/")
        path = ENDPOINTS[options.endpoint]
        self.name, self.options, self.stop, self.deadline = name, options, stop, deadline
        self.url = base + (path.removeprefix("/v1") if base.endswith("/v1") else path)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if options.api_key_env:
            self.headers["Authorization"] = f"Bearer {os.environ[options.api_key_env]}"
        # Direct in-cluster Services and local ports: never route through an HTTP(S)_PROXY;
        # every request bounded by its deadline, not only each read by the timeout.
        handlers = (urllib.request.ProxyHandler({}), DeadlineHandler(), DeadlineHTTPSHandler())
        self.opener = urllib.request.build_opener(*handlers)
        self.retries = 0
        self._lock = threading.Lock()

    def ask(self, prompt: Prompt) -> Answer:
        """Send one prompt, retrying connection errors and HTTP 5xx/429 up to
        `options.retries` times with exponential backoff (0.5..1 x `backoff` x 2^attempt).

        Raises DeadlineReached when the run's deadline cut the request short, else
        CheckError, its message prefixed with the backend's name and URL.
        """
        body = json.dumps(request_body(self.options, prompt)).encode()
        for attempt in range(self.options.retries + 1):
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineReached(f"{self.name}: deadline passed before prompt {prompt.id}")
            if self.stop.is_set():
                raise CheckError(f"{self.name}: stopped before prompt {prompt.id} was answered")
            try:
                timeout = min(self.options.timeout, remaining)
                payload = self._post(body, timeout)
                options = self.options
                return parse_answer(
                    payload, options.endpoint, options.wants_tokens, options.wants_top
                )
            except TimedOut as exc:
                if timeout < self.options.timeout:
                    raise DeadlineReached(f"{self.name}: {exc} (deadline)") from None
                raise CheckError(f"{self.name} {self.url}: {exc} (prompt {prompt.id})") from None
            except Retryable as exc:
                if attempt == self.options.retries:
                    raise CheckError(
                        f"{self.name} {self.url}: {exc} (prompt {prompt.id}, {attempt} retries)"
                    ) from None
                wait = self.options.backoff * 2**attempt * random.uniform(0.5, 1.0)
                with self._lock:
                    self.retries += 1
                if self.stop.wait(min(MAX_BACKOFF, max(wait, exc.retry_after))):
                    raise CheckError(f"{self.name}: stopped while retrying") from None
            except CheckError as exc:
                raise CheckError(f"{self.name} {self.url}: {exc} (prompt {prompt.id})") from None
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _post(self, body: bytes, timeout: float) -> bytes:
        request = urllib.request.Request(self.url, body, self.headers, method="POST")
        request.deadline = time.monotonic() + timeout  # type: ignore[attr-defined]
        try:
            with self.opener.open(request, timeout=timeout) as response:
                return read_capped(response, MAX_ANSWER_BYTES)
        except urllib.error.HTTPError as exc:
            try:
                detail = f"HTTP {exc.code}: {redact(head(exc.read(MAX_ERROR_BYTES)))}"
            except (OSError, http.client.HTTPException):
                detail = f"HTTP {exc.code}"
            if exc.code == 429 or exc.code >= 500:
                raise Retryable(detail, retry_after(exc.headers.get("Retry-After"))) from None
            raise CheckError(detail) from None
        except TooLarge as exc:
            raise CheckError(str(exc)) from None
        except TimeoutError:
            raise TimedOut(f"no answer within {timeout:.3g} s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise TimedOut(f"no answer within {timeout:.3g} s") from None
            reason = getattr(exc.reason, "strerror", None) or exc.reason
            raise Retryable(f"cannot connect ({reason})") from None
        except (ConnectionError, http.client.HTTPException) as exc:
            raise Retryable(f"connection lost ({type(exc).__name__}: {exc})") from None
        except OSError as exc:  # TLS and other socket failures: no answer
            raise Retryable(f"connection failed ({exc.strerror or exc})") from None
