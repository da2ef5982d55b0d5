"""The judge protocol's wire: typed messages read and write exactly what protocol 1 carries.

A base judges heads of other commits, so the JSON must not move: the literals in
`tests/fixtures/protocol/` were written by the dict code before the typed messages, and each
reads into a `JudgeRequest` / `Verdict` and writes back byte for byte. Malformed input is one
JudgeError line naming the key (fail closed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dualstack.offline.protocol import BASE_WEIGHT, JudgeError, JudgeRequest, Verdict
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "protocol"
CASES = ("prod-preview", "prod-policy-config", "fleet-policy-config", "canary-first-deploy")


def wire(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def text(message: dict) -> str:
    """The bytes on the wire (key order included), as `json.dumps` writes them."""
    return json.dumps(message)


@pytest.mark.parametrize("case", CASES)
def test_a_request_of_the_dict_code_round_trips_unchanged(case):
    message = wire(f"{case}.request")
    assert text(JudgeRequest.from_wire(message).to_wire()) == text(message)


@pytest.mark.parametrize("case", CASES)
def test_a_verdict_of_the_dict_code_round_trips_unchanged(case):
    message = wire(f"{case}.verdict")
    assert text(Verdict.from_wire(message).to_wire()) == text(message)


def test_the_typed_request_reads_what_the_base_needs():
    preview = JudgeRequest.from_wire(wire("prod-preview.request"))
    assert preview.previous_weight == BASE_WEIGHT  # absent: the base's own weight
    assert preview.head_config["dualstack-inference:ascendWeight"] == "20"
    assert [o["kind"] for o in preview.head_objects] == ["ServiceAccount", "ServiceAccount"]
    config_only = JudgeRequest.from_wire(wire("prod-policy-config.request"))
    assert (config_only.head_config, config_only.head_objects) == (None, None)
    assert config_only.previous_weight == 5
    fleet = JudgeRequest.from_wire(wire("fleet-policy-config.request"))
    assert fleet.previous_weight == {"chat": 5, "embedder": 20, "reranker": None}
    assert fleet.owner_approved is True
    assert JudgeRequest.from_wire(wire("canary-first-deploy.request")).previous_weight is None


def test_the_typed_verdict_reads_what_the_preview_shows():
    prod = Verdict.from_wire(wire("prod-preview.verdict"))
    assert (prod.first_deploy, prod.previous_weight, prod.base.ascend_weight) == (False, 5, 5)
    assert prod.base.replicas == {"nvidia": 4, "ascend": 2}
    assert {r.outcome for r in prod.results} <= {"pass", "violation", "advisory", "disabled"}
    fleet = Verdict.from_wire(wire("fleet-policy-config.verdict"))
    assert sorted(fleet.base.services) == ["chat", "embedder", "reranker"]
    assert fleet.base.member("embedder").ascend_weight == 20
    assert fleet.base.member("new-in-head") is None
    assert fleet.results is None  # no objects asked: no pack run
    first = Verdict.from_wire(wire("canary-first-deploy.verdict"))
    assert (first.first_deploy, first.base, first.previous_weight) == (True, None, None)
    assert first.envelope[0].describe() == "Pulumi.canary.yaml: absent -> added"


def test_a_new_request_is_what_the_dict_code_sent():
    old = wire("prod-policy-config.request")
    new = JudgeRequest("prod", Path(old["headRoot"]), None, None, False, 5)
    assert text(new.to_wire()) == text(old)


def request_with(**changes) -> dict:
    message = {**wire("prod-preview.request"), **changes}
    return {k: v for k, v in message.items() if v is not DROP}


DROP = object()


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ([1], "request: expected a JSON object, got list"),
        (request_with(protocol=2), "request speaks protocol 2, not 1"),
        (request_with(protocol=DROP), "request speaks protocol None, not 1"),
        (request_with(stack=DROP), "request: stack is missing"),
        (request_with(stack=7), "request: stack 7 is not a string"),
        (request_with(headRoot=None), "request: headRoot None is not a string"),
        (request_with(headConfig=[]), "request: headConfig [] is not an object or null"),
        (request_with(headObjects={}), "request: headObjects {} is not a list or null"),
        (request_with(previousWeight="5"), "request: previousWeight '5' is not a weight"),
        (request_with(previousWeight=True), "request: previousWeight True is not a weight"),
        (
            request_with(previousWeight={"chat": "5"}),
            "request: previousWeight {'chat': '5'} is not a map of weights",
        ),
    ],
)
def test_a_malformed_request_is_one_line_naming_the_key(message, error):
    with pytest.raises(JudgeError) as raised:
        JudgeRequest.from_wire(message)
    assert str(raised.value) == error


def verdict_with(**changes) -> dict:
    message = {**wire("prod-preview.verdict"), **changes}
    return {k: v for k, v in message.items() if v is not DROP}


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ("{}", "verdict: expected a JSON object, got str"),
        (verdict_with(protocol=0), "verdict speaks protocol 0, not 1"),
        (verdict_with(baseCommit=DROP), "verdict: baseCommit is missing"),
        (verdict_with(firstDeploy=True), "verdict: firstDeploy True but base is {'ascendWeight'"),
        (verdict_with(base={"ascendWeight": 5}), "verdict: base: replicas is missing"),
        (verdict_with(base=[]), "verdict: base [] is not an object or null"),
        (verdict_with(ownerApproved="no"), "verdict: ownerApproved 'no' is not true or false"),
        (verdict_with(packConfig=None), "verdict: packConfig None is not an object"),
        (verdict_with(results={}), "verdict: results {} is not a list or null"),
        (verdict_with(envelope=["x"]), "verdict: envelope[0] 'x' is not an object"),
        (verdict_with(envelope=[{"fact": "x"}]), "verdict: envelope[0] {'fact': 'x'} is malformed"),
        (
            verdict_with(results=[{"policy": "p", "verdict": "ok"}]),
            "verdict: results[0] {'policy': 'p', 'verdict': 'ok'} is malformed: ",
        ),
        (verdict_with(previousWeight=[5]), "verdict: previousWeight [5] is not a weight"),
    ],
)
def test_a_malformed_verdict_is_one_line_naming_the_key(message, error):
    with pytest.raises(JudgeError) as raised:
        Verdict.from_wire(message)
    assert str(raised.value).startswith(error)
    assert "\n" not in str(raised.value)


def test_the_base_s_judge_answers_a_malformed_request_with_one_line(stack_repo):
    """`dualstack ci judge` (the base's side of the pipe, its own code): exit 2, one `error:`
    line, no JSON."""
    repo = stack_repo(5)
    done = subprocess.run(
        [sys.executable, "-m", "dualstack", "ci", "judge", "--stack", "prod", "--protocol", "1"],
        input=json.dumps(request_with(headConfig=[])),
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo)},
        timeout=300,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "error: request: headConfig [] is not an object or null\n"
