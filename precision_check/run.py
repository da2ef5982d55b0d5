"""Running the whole check: every prompt to both backends at once, then the verdict."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping

from . import progress
from .accuracy import Accuracy, is_correct
from .backend import Backend, DeadlineReached, request_body
from .compare import Difference, compare, snippet
from .options import HARDWARE, CheckError, Options
from .prompts import Prompt
from .report import Baseline, Mismatch, Repeat, Report
from .shapes import Answer

Answers = Mapping[tuple[str, int], Answer]
"""One backend's answers by (prompt id, run), runs counted from 0."""


def _work(backend: Backend, todo: queue.SimpleQueue, results: queue.SimpleQueue) -> None:
    """One worker thread: ask `backend` the (run, prompt) items left in `todo` until none is
    left or the run stops; put `(hardware, (prompt id, run), Answer or exception)` on
    `results`. The first failure stops every worker of both backends, so no new request
    starts after it."""
    while not backend.stop.is_set():
        try:
            run, prompt = todo.get_nowait()
        except queue.Empty:
            return
        try:
            results.put((backend.name, (prompt.id, run), backend.ask(prompt)))
        except Exception as exc:  # handed to the run, which tells failures from bugs
            backend.stop.set()
            results.put((backend.name, (prompt.id, run), exc))
            return


def _validate(options: Options, prompts: list[Prompt]) -> None:
    for prompt in prompts:
        request_body(options, prompt)
        if options.mode == "accuracy" and not prompt.answers:
            raise CheckError(
                f"prompt {prompt.id} has no reference `answer`: the accuracy mode needs one on "
                "every prompt (or use the built-in set: no --prompts)"
            )


def run_check(options: Options, prompts: list[Prompt]) -> Report:
    """Ask both backends every prompt (twice with `options.baseline`) and judge the answers.

    `options.concurrency` daemon worker threads per backend keep that many requests in flight
    on each, so 50 prompts at 100 ms take about ceil(50 / concurrency) x 100 ms per run (the
    baseline's second run is queued behind the first). The first request that fails after
    its retries, or the deadline, stops the run at once: no new request starts, and requests
    still in flight are abandoned (daemon threads, so neither this function nor the process
    waits for them). A hanging backend thus ends the run after about one `timeout`, and
    `Report.duration` is the real wall time. Backend failures land in `Report.errors` (exit
    2), they are never raised. Raises CheckError only when a prompt cannot be sent at all (a
    chat prompt to the completions API) or lacks the reference answer the accuracy mode needs.
    """
    _validate(options, prompts)
    started = time.monotonic()
    deadline, stop = started + options.deadline, threading.Event()
    backends = {hw: Backend(hw, options, stop, deadline) for hw in HARDWARE}
    report = Report(options, len(prompts))
    answers: dict[str, dict[tuple[str, int], Answer]] = {hw: {} for hw in HARDWARE}
    results: queue.SimpleQueue = queue.SimpleQueue()
    items = [(run, prompt) for run in range(options.runs) for prompt in prompts]
    for hw in HARDWARE:
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for item in items:
            todo.put(item)
        for index in range(min(options.concurrency, len(items))):
            worker = threading.Thread(
                target=_work,
                args=(backends[hw], todo, results),
                name=f"precision-{hw}-{index}",
                daemon=True,
            )
            worker.start()
    expected, out_of_time = len(items) * len(HARDWARE), False
    try:
        while sum(map(len, answers.values())) < expected and not report.errors and not out_of_time:
            try:
                hw, key, outcome = results.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                out_of_time = True
                continue
            if isinstance(outcome, Answer):
                answers[hw][key] = outcome
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
    if options.mode == "accuracy":
        score(report, prompts, answers["nvidia"], answers["ascend"])
    else:
        judge(report, prompts, answers["nvidia"], answers["ascend"])
    if not report.compared and not report.errors:
        report.errors.append("no prompt was answered by both backends")
    return report


def _mismatch(prompt: Prompt, found: Difference, nvidia: Answer, ascend: Answer, run: int):
    return Mismatch(
        prompt.id,
        prompt.text[:60],
        found.position,
        found.unit,
        snippet(nvidia.text, found.at),
        snippet(ascend.text, found.at),
        found.detail,
        run + 1,
    )


def judge(report: Report, prompts: list[Prompt], nvidia: Answers, ascend: Answers) -> None:
    """Compare every answer pair both backends gave (cross-hardware), and with the baseline
    every backend's two answers to each prompt (same-hardware); fills `report`."""
    options = report.options
    for run in range(options.runs):
        for prompt in prompts:
            key = (prompt.id, run)
            if key in nvidia and key in ascend:
                report.compared += 1
                found = compare(options, nvidia[key], ascend[key])
                if found:
                    record = _mismatch(prompt, found, nvidia[key], ascend[key], run)
                    (report.divergences if found.tolerated else report.mismatches).append(record)
    if not options.baseline:
        return
    baseline = report.baseline = Baseline(options.baseline_margin)
    for hw, answers in (("nvidia", nvidia), ("ascend", ascend)):
        baseline.agreed[hw] = baseline.compared[hw] = 0
        for prompt in prompts:
            first, second = answers.get((prompt.id, 0)), answers.get((prompt.id, 1))
            if first is None or second is None:
                continue
            baseline.compared[hw] += 1
            found = compare(options, first, second, (f"{hw} run 1", f"{hw} run 2"))
            if found and not found.tolerated:
                baseline.repeats.append(
                    Repeat(
                        prompt.id,
                        prompt.text[:60],
                        hw,
                        found.position,
                        found.unit,
                        snippet(first.text, found.at),
                        snippet(second.text, found.at),
                        found.detail,
                    )
                )
            else:
                baseline.agreed[hw] += 1


def score(report: Report, prompts: list[Prompt], nvidia: Answers, ascend: Answers) -> None:
    """Score both backends' answers against each prompt's reference answers; an item the two
    scored differently is a mismatch (its detail says which was right)."""
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for prompt in prompts:
        key = (prompt.id, 0)
        if key not in nvidia or key not in ascend:
            continue
        report.compared += 1
        right = (
            is_correct(nvidia[key].text, prompt.answers or ()),
            is_correct(ascend[key].text, prompt.answers or ()),
        )
        counts[right] += 1
        if right[0] != right[1]:
            expected = " | ".join(repr(a) for a in prompt.answers or ())
            winner = "nvidia" if right[0] else "ascend"
            found = Difference(0, "answer", 0, f"expected {expected}: only {winner} is right")
            report.mismatches.append(_mismatch(prompt, found, nvidia[key], ascend[key], 0))
    report.accuracy = Accuracy(
        both=counts[True, True],
        nvidia_only=counts[True, False],
        ascend_only=counts[False, True],
        neither=counts[False, False],
        tolerance=report.options.accuracy_tolerance,
    )
