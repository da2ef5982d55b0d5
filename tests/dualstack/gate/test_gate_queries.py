"""The gate's queries run concurrently with a bound, report progress, and stop on the first
error; the progress printer stays quiet unless stderr is a terminal or it is asked for."""

from __future__ import annotations

import contextlib
import io
import threading
import time

import pytest

from components.settings import load_settings
from dualstack.gate.criteria import evaluate
from dualstack.gate.prometheus import PrometheusUnavailable, Sample
from dualstack.gate.queries import QUERY_WORKERS, run_queries
from dualstack.gate.query_texts import gate_queries
from precision_check.progress import Progress, report, reporting, wanted
from tests.conftest import cfg


class CountingClient:
    """Answers every query with no sample; the first `width` callers wait at a barrier of
    `width`, so that many queries must be in flight at once (else the barrier breaks after its
    timeout and `most` stays lower). Records the most in flight and every query asked."""

    base_url = "http://127.0.0.1:1"

    def __init__(self, width: int, fail_on: str | None = None) -> None:
        self.barrier = threading.Barrier(width, timeout=10)
        self.lock = threading.Lock()
        self.in_flight = self.most = 0
        self.asked: list[str] = []
        self.fail_on = fail_on

    def query(self, promql: str, at: float) -> list[Sample]:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            self.asked.append(promql)
            first_round = len(self.asked) <= self.barrier.parties
        try:
            if self.fail_on is not None and self.fail_on in promql:
                raise PrometheusUnavailable(f"Prometheus at {self.base_url} is unreachable: down")
            if self.fail_on is not None:
                time.sleep(0.2)  # slow enough that the failure is seen before the queue drains
            elif first_round:
                with contextlib.suppress(threading.BrokenBarrierError):  # `most` tells
                    self.barrier.wait()
            return []
        finally:
            with self.lock:
                self.in_flight -= 1


def test_21_queries_at_most_8_in_flight():
    settings = load_settings(cfg(ascendWeight="20"))
    queries = gate_queries(settings, 1800, 60)
    assert len(queries) == 21
    client = CountingClient(QUERY_WORKERS)
    seen: list[tuple[int, int]] = []
    answers = run_queries(client, queries, 1.0, progress=lambda d, t: seen.append((d, t)))
    assert set(answers) == set(queries)
    assert sorted(client.asked) == sorted(queries.values())
    assert client.most == QUERY_WORKERS == 8
    assert seen == [(n, 21) for n in range(22)]


def test_the_whole_gate_goes_through_the_pool():
    image = load_settings(cfg(ascendWeight="20")).ascend.image
    settings = load_settings(cfg(ascendWeight="20", verifiedAscendImage=image))
    client = CountingClient(QUERY_WORKERS)
    report = evaluate(settings, "s", client, "30m", 1_700_000_000.0)
    assert len(client.asked) == 21 and client.most == QUERY_WORKERS
    assert [c.status for c in report.criteria] == ["NO_DATA", "NO_DATA", "NO_DATA", "PASS"]


def test_the_first_error_stops_the_run_and_is_raised():
    settings = load_settings(cfg(ascendWeight="20"))
    queries = gate_queries(settings, 1800, 60)
    first = next(iter(queries.values()))
    client = CountingClient(1, fail_on=first)
    with pytest.raises(PrometheusUnavailable, match="unreachable: down"):
        run_queries(client, queries, 1.0, workers=1)
    assert client.asked[0] == first
    assert len(client.asked) <= 2  # cancelled: at most the one the worker had taken started


def test_progress_is_quiet_off_a_terminal_unless_asked():
    assert wanted(None, io.StringIO()) is False
    assert wanted(True, io.StringIO()) is True
    assert wanted(False, io.StringIO()) is False


def test_progress_off_a_terminal_prints_plain_lines_and_always_the_last():
    stream = io.StringIO()
    progress = Progress("gate prod", "queries", stream=stream, interval=3600)
    for done in range(22):
        progress(done, 21)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2  # the first, then nothing for an hour but the last
    assert lines[0].startswith("gate prod: 0/21 queries, ")
    assert lines[1].startswith("gate prod: 21/21 queries, ")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_rewrites_one_line():
    stream = Terminal()
    progress = Progress("precision check", "answers", stream=stream)
    with reporting(progress):
        report(1, 48)
        report(2, 48)
    text = stream.getvalue()
    assert text.startswith("\r\x1b[Kprecision check: 1/48 answers, ")
    assert "\r\x1b[Kprecision check: 2/48 answers, " in text
    assert text.endswith("\n")  # closed when the run stopped early
    report(3, 48)  # no hook installed any more: nothing printed
    assert stream.getvalue() == text
