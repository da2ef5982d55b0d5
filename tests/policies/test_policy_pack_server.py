"""The online path without the Pulumi CLI: start the pack the way the CLI's analyzer plugin
does (`python -u -m pulumi.policy <engine> .` inside `policies/`) and speak its gRPC API.

This checks what only a real run can: `policies/__main__.py` imports the validators when run
by path, the pack serves every policy with its level and config schema, and config arriving
through `Configure` (numbers as protobuf doubles) drives the same verdicts as offline.
The server binds 127.0.0.1 on a random port and is stopped by the test.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from dualstack.offline.policy_run import engine_value, type_token
from policies import POLICIES
from tests.conftest import REPO
from tests.support.bounded_process import spawn
from tests.support.policy_objects import ASCEND_IMAGE, JUDGED, deployment, good_stack

TIMEOUT = 20


def struct(value: dict) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(json.loads(json.dumps(engine_value(value))))
    return message


@pytest.fixture
def analyzer():
    """A stub connected to the running pack; the process is killed afterwards."""
    process = spawn(
        [sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:1", "."],
        cwd=REPO / "policies",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True).start()
    try:
        try:
            port = int(lines.get(timeout=TIMEOUT).strip())
        except (queue.Empty, ValueError):
            process.kill()
            pytest.fail(f"the pack did not start: {process.stderr.read()}")
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=TIMEOUT)
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        process.kill()
        process.wait(timeout=TIMEOUT)


def test_pack_serves_every_policy(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=TIMEOUT)
    assert info.name == "dualstack-migration"
    served = {p.name: p for p in info.policies}
    assert list(served) == [p.name for p in POLICIES]
    mandatory = analyzer_pb2.EnforcementLevel.Value("MANDATORY")
    advisory = analyzer_pb2.EnforcementLevel.Value("ADVISORY")
    advisories = {"accelerator-driver-hostpath", "images-pinned-by-digest"}
    assert all(served[name].enforcementLevel == advisory for name in advisories)
    assert all(p.enforcementLevel == mandatory for n, p in served.items() if n not in advisories)
    assert "previousWeight" in served["no-unsafe-weight-jump"].configSchema.properties


def configure(analyzer, config: dict) -> None:
    request = analyzer_pb2.ConfigureAnalyzerRequest(
        policyConfig={
            name: analyzer_pb2.PolicyConfig(
                enforcementLevel=analyzer_pb2.EnforcementLevel.Value("MANDATORY"),
                properties=struct(values),
            )
            for name, values in config.items()
        }
    )
    analyzer.Configure(request, timeout=TIMEOUT)


def analyze_stack(analyzer, stack: list[dict]) -> list:
    """The diagnostics of every stack policy over `stack`, sent as the engine sends it."""
    resources = [
        analyzer_pb2.AnalyzerResource(
            type=type_token(obj),
            properties=struct(obj),
            urn=f"urn:pulumi:prod::dualstack-inference::{type_token(obj)}::{index}",
            name=str(index),
        )
        for index, obj in enumerate(stack)
    ]
    request = analyzer_pb2.AnalyzeStackRequest(resources=resources)
    return list(analyzer.AnalyzeStack(request, timeout=TIMEOUT).diagnostics)


def test_weight_jump_is_judged_against_the_configured_previous_weight(analyzer):
    configure(analyzer, {**JUDGED, "no-unsafe-weight-jump": {"previousWeight": 5}})
    assert analyze_stack(analyzer, good_stack(20)) == []
    [diagnostic] = analyze_stack(analyzer, good_stack(80))
    assert diagnostic.policyName == "no-unsafe-weight-jump"
    assert diagnostic.enforcementLevel == analyzer_pb2.EnforcementLevel.Value("MANDATORY")
    assert "from 5% to 80%" in diagnostic.message
    assert diagnostic.urn.endswith("::3")  # the VirtualService


def test_stack_policies_run_over_the_whole_stack(analyzer):
    configure(
        analyzer,
        {
            **JUDGED,
            "rollback-capacity": {"totalReplicas": 4},
            "no-unsafe-weight-jump": {"previousWeight": 20},
        },
    )
    stack = good_stack(50)
    stack[0]["spec"]["replicas"] = 2
    [diagnostic] = analyze_stack(analyzer, stack)
    assert diagnostic.policyName == "rollback-capacity"
    assert "inference-blue has 2 replicas" in diagnostic.message
    assert diagnostic.urn.endswith("::0")


def test_digest_pinning_is_mandatory_when_configured(analyzer):
    """`dualstack policy-config` writes `enforcementLevel: mandatory` for a stack with
    security.requireImageDigests; the served pack then reports a tag-pinned image as
    mandatory."""
    configure(analyzer, {"images-pinned-by-digest": {}})
    request = analyzer_pb2.AnalyzeRequest(
        type="kubernetes:apps/v1:Deployment",
        properties=struct(deployment("ascend", 1, ASCEND_IMAGE)),
        urn="urn:pulumi:prod::dualstack-inference::kubernetes:apps/v1:Deployment::green",
        name="inference-ascend-deployment",
    )
    diagnostics = analyzer.Analyze(request, timeout=TIMEOUT).diagnostics
    [diagnostic] = [d for d in diagnostics if d.policyName == "images-pinned-by-digest"]
    assert diagnostic.enforcementLevel == analyzer_pb2.EnforcementLevel.Value("MANDATORY")
    assert f"uses {ASCEND_IMAGE}, pinned by the tag v1.2.3-npu only" in diagnostic.message


def test_importing_the_validators_does_not_start_the_pack():
    """Only `policies/__main__.py` builds the PolicyPack (which would serve forever)."""
    code = "import policies, policies.common, policies.stack_view; print(len(policies.POLICIES))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert (done.returncode, done.stdout) == (0, f"{len(POLICIES)}\n"), done.stderr


def test_pack_manifest_names_the_python_runtime():
    manifest = yaml.safe_load((REPO / "policies" / "PulumiPolicy.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    assert manifest["runtime"]["options"]["virtualenv"] == "../.venv"
    assert manifest["version"]
