"""One OpenAI-compatible backend: the request, the answer, retries, timeouts.

Request and response shapes follow the OpenAI API reference (completions: `choices[0].text`,
`logprobs.tokens` / `logprobs.token_logprobs`; chat: `choices[0].message.content`,
`logprobs.content[].token` / `.logprob`), which vLLM and MindIE implement.
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
from dataclasses import dataclass
from typing import Any

from .options import ENDPOINTS, CheckError, Options
from .prompts import Prompt

MAX_BACKOFF = 10.0
"""Seconds: the longest wait before one retry, a server's Retry-After included."""


class Retryable(CheckError):
    """A failure worth retrying: connection refused or lost, HTTP 5xx or 429."""

    def __init__(self, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TimedOut(CheckError):
    """No answer within the request's timeout."""


class DeadlineReached(CheckError):
    """The run's total deadline passed before this request was answered."""


@dataclass(frozen=True)
class Answer:
    """A backend's answer: its text, and its tokens with their log-probabilities when the
    comparison asked for them (empty tuples otherwise)."""

    text: str
    tokens: tuple[str, ...] = ()
    logprobs: tuple[float | None, ...] = ()


def request_body(options: Options, prompt: Prompt) -> dict[str, Any]:
    """The JSON request: greedy decoding (`temperature: 0`), fixed `max_tokens`, `seed`.

    Raises CheckError when a chat prompt is sent to the completions API.
    """
    body: dict[str, Any] = {"max_tokens": options.max_tokens, "temperature": 0}
    if options.model:
        body["model"] = options.model
    if options.seed is not None:
        body["seed"] = options.seed
    if options.endpoint == "chat":
        body["messages"] = list(prompt.messages or [{"role": "user", "content": prompt.prompt}])
        if options.wants_tokens:
            body["logprobs"] = True
        return body
    if prompt.prompt is None:
        raise CheckError(f"prompt {prompt.id} has chat messages; use --endpoint chat")
    body["prompt"] = prompt.prompt
    if options.wants_tokens:
        body["logprobs"] = 1  # completions API: the chosen token's logprob and 1 alternative
    return body


def head(payload: bytes) -> str:
    """The first 80 characters of a response body, quoted, for one-line error messages."""
    return repr(payload[:80].decode("utf-8", "replace"))


def parse_answer(payload: bytes, endpoint: str, want_tokens: bool) -> Answer:
    """An Answer from a response body; raises CheckError when it is not JSON, has no
    `choices[0]` text, the text is empty (`""`: two empty answers would match, so an empty
    completion is malformed, never a pass), or it lacks the per-token logprobs `want_tokens`
    needs. Whitespace is an answer: with a small `max_tokens` it may be all a model says."""
    try:
        choice = json.loads(payload)["choices"][0]
        if endpoint == "chat":
            text = choice["message"]["content"]
            entries = (choice.get("logprobs") or {}).get("content") or []
            tokens = [entry["token"] for entry in entries]
            logprobs = [entry["logprob"] for entry in entries]
        else:
            text = choice["text"]
            entries = choice.get("logprobs") or {}
            tokens = entries.get("tokens") or []
            logprobs = entries.get("token_logprobs") or []
    except ValueError as exc:
        raise CheckError(f"malformed response, not JSON ({exc}): {head(payload)}") from None
    except (KeyError, IndexError, TypeError, AttributeError):
        raise CheckError(f"malformed response, no choices[0] answer: {head(payload)}") from None
    if not isinstance(text, str):
        raise CheckError(f"malformed response, the answer is not text: {head(payload)}")
    if not text:
        raise CheckError(f"malformed response, empty answer: {head(payload)}")
    well_formed = (
        len(tokens) == len(logprobs)
        and all(isinstance(t, str) for t in tokens)
        and all(v is None or isinstance(v, (int, float)) for v in logprobs)
    )
    if want_tokens and (not tokens or not well_formed):
        raise CheckError("no per-token logprobs in the response; does the server support them?")
    return Answer(text, tuple(tokens), tuple(logprobs))


class Backend:
    """One server (`nvidia` or `ascend`); `ask` is called from many threads.

    Every request's timeout is capped by the time left before `deadline` (a
    `time.monotonic()` value); `stop` ends retries early once the run is over.
    """

    def __init__(self, name: str, options: Options, stop: threading.Event, deadline: float) -> None:
        base = getattr(options, name).rstrip("/")
        path = ENDPOINTS[options.endpoint]
        self.name, self.options, self.stop, self.deadline = name, options, stop, deadline
        self.url = base + (path.removeprefix("/v1") if base.endswith("/v1") else path)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if options.api_key_env:
            self.headers["Authorization"] = f"Bearer {os.environ[options.api_key_env]}"
        # Direct in-cluster Services and local ports: never route through an HTTP(S)_PROXY.
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
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
                return parse_answer(payload, self.options.endpoint, self.options.wants_tokens)
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
        try:
            with self.opener.open(request, timeout=timeout) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            detail = f"HTTP {exc.code}: {head(exc.read())}"
            if exc.code == 429 or exc.code >= 500:
                retry_after = exc.headers.get("Retry-After", "")
                raise Retryable(
                    detail, float(retry_after) if retry_after.isdigit() else 0
                ) from None
            raise CheckError(detail) from None
        except TimeoutError:
            raise TimedOut(f"no answer within {timeout:.3g} s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise TimedOut(f"no answer within {timeout:.3g} s") from None
            reason = getattr(exc.reason, "strerror", None) or exc.reason
            raise Retryable(f"cannot connect ({reason})") from None
        except (ConnectionError, http.client.HTTPException) as exc:
            raise Retryable(f"connection lost ({type(exc).__name__}: {exc})") from None
