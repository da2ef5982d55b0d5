"""A Prometheus client for the gate's unit tests: it answers each exact PromQL text from a
dict, at one query time, and fails the test on any other query or time. The gate's tests
against a real Prometheus use tests/support/prometheus_server.py instead."""

from __future__ import annotations

from dualstack.gate.prometheus import Sample

AT = 1_700_000_000.0
"""The query time (unix seconds, 2023-11-14T22:13:20Z) of every answer."""


def samples(*values: float) -> list[Sample]:
    """An instant vector of one sample per value, each on its own pod."""
    return [Sample({"pod": f"p{i}"}, value) for i, value in enumerate(values)]


class PromQLAnswers:
    """Answers each exact PromQL text from `answers` at time AT; `asked` lists the queries
    in the order they were sent."""

    base_url = "http://prometheus.test:9090"

    def __init__(self, answers: dict[str, list[Sample]]):
        self.answers = answers
        self.asked: list[str] = []

    def query(self, promql: str, at: float) -> list[Sample]:
        self.asked.append(promql)
        if at != AT:
            raise AssertionError(f"asked at {at}, not {AT}")
        if promql not in self.answers:
            raise AssertionError(f"unexpected query {promql}")
        return self.answers[promql]
