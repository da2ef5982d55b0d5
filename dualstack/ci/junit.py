"""The pull-request checks as a JUnit XML report, for GitLab's merge-request widget
(`artifacts:reports:junit`) and GitHub's check summary.

Read from what the pipeline recorded per stack under `<dir>/<stack>/` (see
`dualstack.ci.report`): each part's `.rc` / `.skipped`, the preview's `-o json` document in
`offline-preview.json` and the gate's in `gate.json` (`--json-file`). Shape (the common
Surefire/Ant form both GitLab and GitHub read):

    <testsuites name=... tests= failures= errors= skipped=>
      <testsuite name="prod: checks">    one testcase per pipeline part
      <testsuite name="prod: policies">  one testcase per policy of the pack
      <testsuite name="prod: gate">      one testcase per gate criterion
        <testcase classname="dualstack.prod.gate" name="error-ratio: 5xx error ratio">
          <failure type="FAIL" message="Ascend's 5xx ratio exceeds ...">...</failure>

A part that errored (exit 2) is an `<error>`, a failed one a `<failure>`, a skipped one
`<skipped>`. A policy with a mandatory violation fails; an advisory finding passes with its
message in `<system-out>`; a disabled policy is skipped. A gate criterion that is FAIL or
NO_DATA fails (NO_DATA never passes), one not required at 0% is skipped. Built with the
standard library's xml.etree; text is escaped by it.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dualstack.ci.report import PartResult

Outcome = Literal["passed", "failure", "error", "skipped"]
COUNTED = (("failure", "failures"), ("error", "errors"), ("skipped", "skipped"))
"""(outcome, the `<testsuite>` attribute counting it)."""


@dataclass(frozen=True)
class Case:
    """One test case: its name, outcome, a one-line message and the longer text."""

    classname: str
    name: str
    outcome: Outcome = "passed"
    kind: str = ""
    message: str = ""
    text: str = ""


@dataclass
class Suite:
    """One `<testsuite>`: a stack's checks, policies or gate."""

    name: str
    cases: list[Case] = field(default_factory=list)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for c in self.cases if c.outcome == outcome)


def part_cases(stack: str, results: Sequence[PartResult]) -> list[Case]:
    """One case per pipeline part of `stack` (offline preview, policy config, ...)."""
    cases = []
    for result in results:
        name = f"{result.part.name}: {result.part.title}"
        base = Case(f"dualstack.{stack}.checks", name)
        code = f"exit {result.exit_code}" if result.exit_code is not None else "no exit code"
        if result.status == "pass":
            cases.append(base)
        elif result.status in ("skipped", "not-run"):
            why = result.note or "not run"
            cases.append(Case(base.classname, name, "skipped", message=why))
        elif result.status == "failed":
            advisory = "" if result.part.blocking else " (advisory)"
            cases.append(
                Case(base.classname, name, "failure", "failed", f"{code}{advisory}", result.body)
            )
        else:
            why = result.note or code
            cases.append(Case(base.classname, name, "error", "error", why, result.body))
    return cases


def policy_cases(stack: str, preview: Mapping[str, Any]) -> list[Case]:
    """One case per policy in a `dualstack/preview/v1` stack element, in the pack's order."""
    by_policy: dict[str, list[Mapping[str, Any]]] = {}
    for result in preview.get("policies", []):
        by_policy.setdefault(result["policy"], []).append(result)
    cases = []
    for policy, results in by_policy.items():
        level = results[0].get("enforcement", "")
        name = f"{policy} [{level}]" if level else policy
        classname = f"dualstack.{stack}.policies"
        text = "\n".join(_line(r) for r in results if r.get("message"))
        outcomes = {r["outcome"] for r in results}
        if "violation" in outcomes:
            first = next(_line(r) for r in results if r["outcome"] == "violation")
            cases.append(Case(classname, name, "failure", "violation", first or "violation", text))
        elif outcomes == {"disabled"}:
            cases.append(Case(classname, name, "skipped", message="disabled by the pack config"))
        else:
            cases.append(Case(classname, name, text=text))
    return cases


def _line(result: Mapping[str, Any]) -> str:
    where = f"{result['resource']}: " if result.get("resource") else ""
    return f"{where}{result.get('message', '')}"


def gate_cases(stack: str, gate: Mapping[str, Any]) -> list[Case]:
    """One case per criterion in a `dualstack/gate/v1` stack element."""
    cases = []
    for criterion in gate.get("criteria", []):
        name = f"{criterion['key']}: {criterion['title']}"
        classname = f"dualstack.{stack}.gate"
        nvidia = criterion.get("nvidia")
        text = (
            f"Ascend {criterion['ascend']}"
            + (f", NVIDIA {nvidia}" if nvidia else "")
            + f"; threshold {criterion['threshold']}; {criterion['detail']}"
        )
        if not criterion.get("required", True):
            why = f"{criterion['status']}, not required: {criterion['detail']}"
            cases.append(Case(classname, name, "skipped", message=why, text=text))
        elif criterion["status"] == "PASS":
            cases.append(Case(classname, name, text=text))
        else:
            cases.append(
                Case(classname, name, "failure", criterion["status"], criterion["detail"], text)
            )
    return cases


def _document(path: Path, schema: str) -> Mapping[str, Any] | None:
    """The first stack element of a recorded `-o json` document, or None when the file is
    missing, unreadable or of another schema (the part's own result then says why)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != schema or not doc.get("stacks"):
        return None
    return doc["stacks"][0]


def suites(root: Path, results: Mapping[str, Sequence[PartResult]]) -> list[Suite]:
    """The suites of every stack: checks, then policies and gate where their documents are."""
    found = []
    for stack, parts in results.items():
        found.append(Suite(f"{stack}: checks", part_cases(stack, parts)))
        preview = _document(root / stack / "offline-preview.json", "dualstack/preview/v1")
        if preview is not None:
            found.append(Suite(f"{stack}: policies", policy_cases(stack, preview)))
        gate = _document(root / stack / "gate.json", "dualstack/gate/v1")
        if gate is not None:
            found.append(Suite(f"{stack}: gate", gate_cases(stack, gate)))
    return found


def _counts(element: ET.Element, cases: Sequence[Case]) -> None:
    element.set("tests", str(len(cases)))
    for outcome, attribute in (
        ("failure", "failures"),
        ("error", "errors"),
        ("skipped", "skipped"),
    ):
        element.set(attribute, str(sum(1 for c in cases if c.outcome == outcome)))


def junit_xml(all_suites: Sequence[Suite], name: str) -> str:
    """The JUnit XML text (UTF-8 declaration, indented) of `all_suites`."""
    root = ET.Element("testsuites", name=name)
    _counts(root, [c for s in all_suites for c in s.cases])
    for suite in all_suites:
        element = ET.SubElement(root, "testsuite", name=suite.name)
        _counts(element, suite.cases)
        for case in suite.cases:
            node = ET.SubElement(
                element, "testcase", classname=case.classname, name=case.name, time="0"
            )
            if case.outcome in ("failure", "error"):
                detail = ET.SubElement(node, case.outcome, message=case.message, type=case.kind)
                detail.text = case.text or case.message
            elif case.outcome == "skipped":
                ET.SubElement(node, "skipped", message=case.message)
            if case.outcome in ("passed", "skipped") and case.text:
                ET.SubElement(node, "system-out").text = case.text
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def summary_markdown(all_suites: Sequence[Suite]) -> str:
    """A Markdown table of the suites (for $GITHUB_STEP_SUMMARY), then every case that did
    not pass."""
    lines = [
        "### Test cases",
        "",
        "| Suite | Passed | Failed | Errors | Skipped |",
        "|---|---|---|---|---|",
    ]
    for suite in all_suites:
        lines.append(
            f"| {suite.name} | {suite.count('passed')} | {suite.count('failure')} | "
            f"{suite.count('error')} | {suite.count('skipped')} |"
        )
    bad = [(s, c) for s in all_suites for c in s.cases if c.outcome in ("failure", "error")]
    if bad:
        lines += ["", "Not passed:", ""]
        for suite, case in bad:
            message = " ".join(case.message.split())
            lines.append(f"- {suite.name} / {case.name}: {case.outcome}: {message}")
    return "\n".join(lines) + "\n"
