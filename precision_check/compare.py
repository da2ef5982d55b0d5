"""Comparing two answers (exact, prefix, logprobs) and running the whole check."""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import progress
from .backend import Answer, Backend, DeadlineReached, request_body
from .options import EXIT_ERROR, EXIT_MISMATCH, EXIT_PASS, HARDWARE, CheckError, Options
from .prompts import Prompt

SNIPPET = 24
"""Characters shown on each side of the first difference."""


@dataclass(frozen=True)
class Mismatch:
    """One prompt answered differently: the first differing position (`unit` is `char` or
    `token`), the text around it from both backends, and why it counts as different."""

    prompt_id: str
    prompt: str
    position: int
    unit: str
    nvidia: str
    ascend: str
    detail: str


def first_difference(a: Sequence[Any], b: Sequence[Any]) -> int | None:
    """Index of the first differing element of two sequences; None when they are equal.
    A sequence that is a strict prefix of the other differs at its length."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


def snippet(text: str, position: int) -> str:
    """`text` around `position`, `SNIPPET` characters each side, `…` where cut."""
    start, end = max(0, position - SNIPPET), position + SNIPPET
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def compare(options: Options, prompt: Prompt, nvidia: Answer, ascend: Answer) -> Mismatch | None:
    """The mismatch of one prompt under `options.mode`, or None when the answers agree.

    - `exact`: identical text.
    - `prefix`: identical first `prefix_length` characters (or backend tokens).
    - `logprobs`: identical tokens, and every token's logprob within `tolerance`.
    """

    def mismatch(position: int, unit: str, detail: str) -> Mismatch:
        at = len("".join(nvidia.tokens[:position])) if unit == "token" else position
        return Mismatch(
            prompt.id,
            prompt.text[:60],
            position,
            unit,
            snippet(nvidia.text, at),
            snippet(ascend.text, at),
            detail,
        )

    limit = options.prefix_length if options.mode == "prefix" else None
    if not options.wants_tokens:
        position = first_difference(nvidia.text[:limit], ascend.text[:limit])
        return None if position is None else mismatch(position, "char", "texts differ")
    position = first_difference(nvidia.tokens[:limit], ascend.tokens[:limit])
    if position is not None:
        return mismatch(position, "token", "tokens differ")
    if options.mode != "logprobs":
        return None
    for index, (x, y) in enumerate(zip(nvidia.logprobs, ascend.logprobs, strict=True)):
        if x is None and y is None:
            continue
        if x is None or y is None or abs(x - y) > options.tolerance:
            delta = "" if x is None or y is None else f" differ by {abs(x - y):.4g}"
            detail = f"token {nvidia.tokens[index]!r}: logprobs {x} vs {y}{delta}"
            return mismatch(index, "token", f"{detail} > tolerance {options.tolerance:g}")
    return None


@dataclass
class Report:
    """The outcome of one run. `compared` counts prompts both backends answered;
    `answered` and `retries` are per backend."""

    options: Options
    prompts: int
    compared: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    duration: float = 0.0
    answered: dict[str, int] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)

    @property
    def matched(self) -> int:
        """Prompts both backends answered alike."""
        return self.compared - len(self.mismatches)

    @property
    def match_rate(self) -> float:
        """Matched / all prompts, in %: an unanswered prompt never counts as a match."""
        return 100.0 * self.matched / self.prompts if self.prompts else 0.0

    @property
    def exit_code(self) -> int:
        """2 on any error or when no prompt was compared (an error is never a pass), else 1
        below `min_match_rate` or when no prompt matched, else 0."""
        if self.errors or not self.prompts or not self.compared:
            return EXIT_ERROR
        enough = self.matched * 100 >= self.options.min_match_rate * self.prompts - 1e-9
        return EXIT_PASS if enough and self.matched > 0 else EXIT_MISMATCH

    @property
    def status(self) -> str:
        """`pass`, `mismatch` or `error`."""
        return ("pass", "mismatch", "error")[self.exit_code]

    def to_json(self) -> dict[str, Any]:
        """The JSON report (`--json FILE`); rates in %, durations in seconds."""
        backends = {
            hw: {
                "url": getattr(self.options, hw),
                "image": getattr(self.options, f"{hw}_image"),
                "answered": self.answered.get(hw, 0),
                "retries": self.retries.get(hw, 0),
            }
            for hw in HARDWARE
        }
        return {
            "status": self.status,
            "passed": self.exit_code == EXIT_PASS,
            "mode": self.options.mode,
            "matchRate": round(self.match_rate, 3),
            "minMatchRate": self.options.min_match_rate,
            "prompts": self.prompts,
            "compared": self.compared,
            "matched": self.matched,
            "durationSeconds": round(self.duration, 3),
            "errors": self.errors,
            "mismatches": [dataclasses.asdict(m) for m in self.mismatches],
            "backends": backends,
        }


def _work(backend: Backend, todo: queue.SimpleQueue, results: queue.SimpleQueue) -> None:
    """One worker thread: ask `backend` the prompts left in `todo` until none is left or the
    run stops; put `(hardware, prompt id, Answer or exception)` on `results`. The first
    failure stops every worker of both backends, so no new request starts after it."""
    while not backend.stop.is_set():
        try:
            prompt = todo.get_nowait()
        except queue.Empty:
            return
        try:
            results.put((backend.name, prompt.id, backend.ask(prompt)))
        except Exception as exc:  # handed to the run, which tells failures from bugs
            backend.stop.set()
            results.put((backend.name, prompt.id, exc))
            return


def run_check(options: Options, prompts: list[Prompt]) -> Report:
    """Ask both backends every prompt and compare the answers.

    `options.concurrency` daemon worker threads per backend keep that many requests in flight
    on each, so 50 prompts at 100 ms take about ceil(50 / concurrency) x 100 ms. The first
    request that fails after its retries, or the deadline, stops the run at once: no new
    request starts, and requests still in flight are abandoned (daemon threads, so neither
    this function nor the process waits for them). A hanging backend thus ends the run
    after about one `timeout`, and `Report.duration` is the real wall time. Backend failures
    land in `Report.errors` (exit 2), they are never raised. Raises CheckError only when a
    prompt cannot be sent at all (a chat prompt to the completions API).
    """
    for prompt in prompts:
        request_body(options, prompt)
    started = time.monotonic()
    deadline, stop = started + options.deadline, threading.Event()
    backends = {hw: Backend(hw, options, stop, deadline) for hw in HARDWARE}
    report = Report(options, len(prompts))
    answers: dict[str, dict[str, Answer]] = {hw: {} for hw in HARDWARE}
    results: queue.SimpleQueue = queue.SimpleQueue()
    for hw in HARDWARE:
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for prompt in prompts:
            todo.put(prompt)
        for index in range(min(options.concurrency, len(prompts))):
            worker = threading.Thread(
                target=_work,
                args=(backends[hw], todo, results),
                name=f"precision-{hw}-{index}",
                daemon=True,
            )
            worker.start()
    expected, out_of_time = len(prompts) * len(HARDWARE), False
    try:
        while sum(map(len, answers.values())) < expected and not report.errors and not out_of_time:
            try:
                hw, prompt_id, outcome = results.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                out_of_time = True
                continue
            if isinstance(outcome, Answer):
                answers[hw][prompt_id] = outcome
                progress.report(sum(map(len, answers.values())), expected)
            elif isinstance(outcome, DeadlineReached):
                out_of_time = True
            elif isinstance(outcome, CheckError):
                report.errors.append(str(outcome))
            else:
                raise outcome  # a bug, not a backend failure
    finally:
        stop.set()
    report.duration = time.monotonic() - started
    unanswered = expected - sum(map(len, answers.values()))
    if out_of_time and not report.errors:
        report.errors.append(
            f"deadline of {options.deadline:g} s passed with {unanswered} of {expected} "
            "requests unanswered"
        )
    report.answered = {hw: len(answers[hw]) for hw in HARDWARE}
    report.retries = {hw: backends[hw].retries for hw in HARDWARE}
    for prompt in prompts:
        if all(prompt.id in answers[hw] for hw in HARDWARE):
            report.compared += 1
            found = compare(
                options, prompt, answers["nvidia"][prompt.id], answers["ascend"][prompt.id]
            )
            if found:
                report.mismatches.append(found)
    if not report.compared and not report.errors:
        report.errors.append("no prompt was answered by both backends")
    return report
