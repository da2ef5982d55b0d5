"""checkov, for real, over fixture stacks at several ladder rungs (one run: checkov is slow to
start), with the checked-in `.checkov.yaml`; `make checkov` does the same for the committed
stacks. The run lifts the config's skips (`--skip-check` on the command line replaces the
file's), so the test sees what each skip hides and that nothing else fails.

checkov lives in its own virtualenv, `.ci/checkov-venv` (`make tools`); missing, the test skips,
except under CI (env CI set), where it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from dualstack.offline.render import render, to_yaml
from dualstack.offline.schemas import validate_objects
from tests.conftest import REPO, cfg

CONFIG = REPO / ".checkov.yaml"
DIGEST = "sha256:" + "0123456789abcdef" * 4
NVIDIA = "registry/inference-service:v1.2.3-cuda"
ASCEND = "registry/inference-service:v1.2.3-npu"
STACKS = {
    # like prod on the first rung: tags, the article's cluster
    "rung-5": cfg(ascendWeight="5", verifiedAscendImage=ASCEND),
    # like staging two rungs up, in its own namespace
    "rung-50": cfg(
        ascendWeight="50",
        namespace="inference-staging",
        capacity={"totalReplicas": 2},
        verifiedAscendImage=ASCEND,
    ),
    # migrated, everything pinned by digest, gateways, a CronJob re-check pushing metrics
    "rung-100": cfg(
        ascendWeight="100",
        namespace="inference-digest",
        nvidia={"image": f"{NVIDIA}@{DIGEST}"},
        ascend={"image": f"{ASCEND}@{DIGEST}"},
        verifiedAscendImage=f"{ASCEND}@{DIGEST}",
        istio={"gateways": ["istio-system/public"], "hosts": ["inference.example.com"]},
        precisionCheck={
            "image": f"python:3.12.7-slim-bookworm@{DIGEST}",
            "schedule": "0 3 * * *",
            "pushgatewayUrl": "http://pushgateway.monitoring:9091",
        },
        security={"requireImageDigests": True},
    ),
}


def checkov_binary() -> str:
    found = REPO / ".ci" / "checkov-venv" / "bin" / "checkov"
    if found.is_file():
        return str(found)
    if on_path := shutil.which("checkov"):
        return on_path
    if os.environ.get("CI"):
        pytest.fail("checkov is missing: run `make tools` (.ci/install-tools)")
    pytest.skip("checkov is not installed: run `make tools`")


def skipped_checks() -> list[str]:
    return yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["skip-check"]


def test_every_skip_carries_its_reason():
    """Each `skip-check` entry follows a comment naming that check and why it is skipped."""
    lines = CONFIG.read_text(encoding="utf-8").splitlines()
    entries = [i for i, line in enumerate(lines) if re.match(r"^\s+- CKV", line)]
    assert [lines[i].split("- ")[1] for i in entries] == skipped_checks() == ["CKV_K8S_43"]
    for index in entries:
        check = lines[index].split("- ")[1].strip()
        comment = []
        for line in reversed(lines[:index]):
            if not line.strip().startswith("#"):
                break
            comment.insert(0, line.strip("# "))
        assert comment and comment[0].startswith(f"{check} "), check
        assert len(" ".join(comment)) > 100, f"{check}: the reason is too short to review"


def test_checkov_passes_every_rung_outside_the_justified_skip(tmp_path):
    checkov = checkov_binary()
    for stack, config in STACKS.items():
        _settings, objects = render(config, stack)
        validate_objects(objects)  # kubernetes-validate strict and the CRD schemas
        (tmp_path / f"{stack}.yaml").write_text(to_yaml(objects), encoding="utf-8")
    command = [checkov, "--config-file", str(CONFIG), "--skip-check", "NONE", "-o", "json"]
    done = subprocess.run(
        [*command, "-d", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(done.stdout)
    failed = {(c["check_id"], c["resource"]) for c in report["results"]["failed_checks"]}
    passed = {(c["check_id"], c["resource"]) for c in report["results"].get("passed_checks", [])}

    # What the one skip hides: exactly the tag-pinned workloads of the first two rungs.
    assert {check for check, _resource in failed} == set(skipped_checks())
    tag_pinned = sorted(resource.split("-precision-")[0] for _check, resource in failed)
    assert tag_pinned == sorted(
        f"{kind}.{namespace}.{name}"
        for namespace in ("inference", "inference-staging")
        for kind, name in [
            ("Deployment", "inference-blue"),
            ("Deployment", "inference-green"),
            ("Job", "inference-service"),
        ]
    )
    assert done.returncode == 1  # only because the skip is lifted

    # What the issue measured as failures passes on every workload of every rung:
    # 2 Deployments and the Job per rung, plus rung-100's CronJob.
    workloads = {resource for check, resource in passed if check == "CKV_K8S_38"}
    assert len(workloads) == 2 * 3 + 4
    for check in ("CKV_K8S_40", "CKV_K8S_22", "CKV_K8S_15"):
        assert {r for c, r in passed if c == check} == workloads, check
    # CKV2_K8S_6: a NetworkPolicy selects every pod. checkov derives a Pod from each
    # Deployment and Job (not from a CronJob): 3 per rung.
    pods = {resource for check, resource in passed if check == "CKV2_K8S_6"}
    assert len(pods) == 3 * 3
    assert all(resource.startswith("Pod.") for resource in pods)
    assert report["summary"]["parsing_errors"] == 0
