"""`dualstack ci junit`: the recorded pull-request checks as JUnit XML, in the shape GitLab's
merge-request widget and GitHub's test reporters read (testsuites > testsuite > testcase with
failure / error / skipped), from the same files the pipelines record."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from dualstack.cli import main


def record(root: Path, stack: str, part: str, rc: int | None = None, **files: str) -> None:
    folder = root / stack
    folder.mkdir(parents=True, exist_ok=True)
    if rc is not None:
        (folder / f"{part}.rc").write_text(f"{rc}\n")
    for suffix, text in files.items():
        (folder / f"{part}.{suffix}").write_text(text)


PREVIEW = {
    "schema": "dualstack/preview/v1",
    "passed": False,
    "stacks": [
        {
            "stack": "prod",
            "policies": [
                {
                    "policy": "no-unsafe-weight-jump",
                    "enforcement": "mandatory",
                    "outcome": "violation",
                    "resource": "VirtualService inference/inference-vs",
                    "message": "raises the Ascend weight 5 -> 80; the next step is 20",
                },
                {
                    "policy": "route-weights-valid",
                    "enforcement": "mandatory",
                    "outcome": "pass",
                    "resource": None,
                    "message": "",
                },
                {
                    "policy": "accelerator-driver-hostpath",
                    "enforcement": "advisory",
                    "outcome": "advisory",
                    "resource": "Deployment inference/inference-green",
                    "message": "mounts /usr/local/Ascend/driver read-only",
                },
            ],
        }
    ],
}
GATE = {
    "schema": "dualstack/gate/v1",
    "passed": False,
    "stacks": [
        {
            "stack": "prod",
            "criteria": [
                {
                    "key": "requests",
                    "title": "Requests in window",
                    "status": "PASS",
                    "required": True,
                    "ascend": "3,480",
                    "nvidia": "13,920",
                    "threshold": ">= 100 each",
                    "detail": "enough traffic on both backends",
                },
                {
                    "key": "error-ratio",
                    "title": "5xx error ratio",
                    "status": "FAIL",
                    "required": True,
                    "ascend": "5.00%",
                    "nvidia": "0.50%",
                    "threshold": "<= 1.50% (NVIDIA + 1.00 pp)",
                    "detail": "Ascend's 5xx ratio exceeds NVIDIA's by 4.50 pp",
                },
                {
                    "key": "p99-latency",
                    "title": "p99 latency",
                    "status": "NO_DATA",
                    "required": True,
                    "ascend": "no data",
                    "nvidia": "0.800 s",
                    "threshold": "<= 1.5 x NVIDIA",
                    "detail": "Ascend: stale: newest sample 11m 0s before the window end",
                },
                {
                    "key": "precision",
                    "title": "Precision check",
                    "status": "PASS",
                    "required": False,
                    "ascend": "img",
                    "nvidia": None,
                    "threshold": "served image = verifiedAscendImage",
                    "detail": "verifiedAscendImage matches",
                },
            ],
        }
    ],
}


def junit(root: Path, tmp_path: Path, stacks: str = "prod", *extra: str) -> ET.Element:
    target = tmp_path / "out" / "junit.xml"
    argv = ["ci", "junit", "--dir", str(root), "--stacks", stacks, "--output", str(target)]
    assert main([*argv, *extra]) == 0
    text = target.read_text()
    assert text.startswith("<?xml version='1.0' encoding='utf-8'?>\n<testsuites ")
    return ET.fromstring(text)


def cases(suite: ET.Element) -> dict[str, tuple[str, str]]:
    """{testcase name: (outcome, message)} of one suite."""
    found = {}
    for case in suite.findall("testcase"):
        child = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        outcome = child.tag if child is not None else "passed"
        found[case.get("name")] = (outcome, child.get("message") if child is not None else "")
    return found


def test_each_part_policy_and_criterion_is_a_test_case(tmp_path):
    root = tmp_path / "reports"
    record(root, "prod", "offline-preview", 1, txt="preview text")
    (root / "prod" / "offline-preview.json").write_text(json.dumps(PREVIEW))
    record(root, "prod", "policy-config", skipped="no PULUMI_ACCESS_TOKEN secret")
    record(root, "prod", "pulumi-preview", skipped="no PULUMI_ACCESS_TOKEN secret")
    record(root, "prod", "gate", 1, md="| gate |")
    (root / "prod" / "gate.json").write_text(json.dumps(GATE))
    tree = junit(root, tmp_path)
    assert tree.tag == "testsuites"
    suites = {s.get("name"): s for s in tree.findall("testsuite")}
    assert list(suites) == ["prod: checks", "prod: policies", "prod: gate"]
    assert cases(suites["prod: checks"]) == {
        "offline-preview: Offline preview and policies (`dualstack preview`)": (
            "failure",
            "exit 1",
        ),
        "policy-config: Policy-pack config from the deployed weight": (
            "skipped",
            "no PULUMI_ACCESS_TOKEN secret",
        ),
        "pulumi-preview: Online preview with the policy pack (`pulumi preview`)": (
            "skipped",
            "no PULUMI_ACCESS_TOKEN secret",
        ),
        "gate: Data gate (`dualstack gate`, advisory)": ("failure", "exit 1 (advisory)"),
    }
    assert cases(suites["prod: policies"]) == {
        "no-unsafe-weight-jump [mandatory]": (
            "failure",
            "VirtualService inference/inference-vs: raises the Ascend weight 5 -> 80; the next "
            "step is 20",
        ),
        "route-weights-valid [mandatory]": ("passed", ""),
        "accelerator-driver-hostpath [advisory]": ("passed", ""),
    }
    assert cases(suites["prod: gate"]) == {
        "requests: Requests in window": ("passed", ""),
        "error-ratio: 5xx error ratio": (
            "failure",
            "Ascend's 5xx ratio exceeds NVIDIA's by 4.50 pp",
        ),
        "p99-latency: p99 latency": (
            "failure",
            "Ascend: stale: newest sample 11m 0s before the window end",
        ),
        "precision: Precision check": (
            "skipped",
            "PASS, not required: verifiedAscendImage matches",
        ),
    }
    advisory = suites["prod: policies"].find(
        "testcase[@name='accelerator-driver-hostpath [advisory]']"
    )
    assert advisory.find("system-out").text == (
        "Deployment inference/inference-green: mounts /usr/local/Ascend/driver read-only"
    )
    failure = suites["prod: gate"].find("testcase[@name='p99-latency: p99 latency']/failure")
    assert failure.get("type") == "NO_DATA"
    counts = {k: tree.get(k) for k in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": "11", "failures": "5", "errors": "0", "skipped": "3"}
    gate = suites["prod: gate"]
    assert (gate.get("tests"), gate.get("failures"), gate.get("skipped")) == ("4", "2", "1")


def test_an_error_is_an_error_and_missing_documents_leave_only_the_checks(tmp_path):
    root = tmp_path / "reports"
    record(root, "staging", "offline-preview", 2, txt="error: Pulumi.staging.yaml: bad\n")
    tree = junit(root, tmp_path, "staging")
    (suite,) = tree.findall("testsuite")
    assert suite.get("name") == "staging: checks"
    outcome = cases(suite)["offline-preview: Offline preview and policies (`dualstack preview`)"]
    assert outcome == ("error", "exit 2")
    error = suite.find("testcase/error")
    assert error.text == "error: Pulumi.staging.yaml: bad\n"
    assert tree.get("errors") == "1"


def test_text_is_escaped_and_the_summary_is_markdown(tmp_path):
    root = tmp_path / "reports"
    record(root, "prod", "offline-preview", 1, txt='<script>"&</script>')
    summary = tmp_path / "summary.md"
    summary.write_text("before\n")
    tree = junit(root, tmp_path, "prod", "--summary", str(summary))
    error = tree.find("testsuite/testcase/failure")
    assert error.text == '<script>"&</script>'
    assert summary.read_text().startswith(
        "before\n### Test cases\n\n| Suite | Passed | Failed | Errors | Skipped |\n"
    )
    assert "| prod: checks | 0 | 1 | 0 | 3 |" in summary.read_text()


def test_no_stacks_is_an_empty_report(tmp_path):
    tree = junit(tmp_path / "reports", tmp_path, "")
    assert (tree.get("tests"), list(tree)) == ("0", [])
