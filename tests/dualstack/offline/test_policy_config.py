"""The policy pack config: built from settings, read from `pulumi stack output`, and the
`dualstack policy-config` command (a fake `pulumi` on PATH stands in for the CLI)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from components.naming import VERIFIED_IMAGE_ANNOTATION
from components.settings import SettingsError, load_settings
from components.traffic import route_weights
from dualstack.cli import main
from dualstack.offline.policy_config import (
    ENFORCEMENT,
    FLEET_ONLY,
    NOT_FROM_SETTINGS,
)
from dualstack.pulumi_cli import StackOutputError, parse_weight, read_deployed_weight
from policies import POLICIES
from policies.supply_chain import VERIFIED_IMAGE_ANNOTATION as PACK_ANNOTATION
from tests.conftest import cfg, find, git
from tests.support.pack_config import single_pack_config

DEFAULTS = load_settings(cfg(ascendWeight="5"))


def test_each_policy_gets_exactly_its_schema_keys():
    settings = load_settings(cfg(ascendWeight="5", policy={"maxStep": 20}))
    config = single_pack_config(settings, 5, base=settings, base_objects=[], envelope=())
    for policy in POLICIES:
        declared = set(policy.config_schema.properties) if policy.config_schema else set()
        expected = declared - NOT_FROM_SETTINGS - FLEET_ONLY
        if policy.name in ENFORCEMENT:
            expected.add("enforcementLevel")
        assert set(config.get(policy.name, {})) == expected, policy.name
    assert config["no-unsafe-weight-jump"]["previousWeight"] == 5


def test_pack_defaults_equal_the_settings_defaults():
    """With no config the pack judges like the default stack: each schema default = setting."""
    config = single_pack_config(DEFAULTS, None)
    compared = 0
    for policy in POLICIES:
        for key, schema in (
            policy.config_schema.properties if policy.config_schema else {}
        ).items():
            if "default" in schema:
                assert config[policy.name][key] == schema["default"], (policy.name, key)
                compared += 1
    assert compared >= 10
    assert PACK_ANNOTATION == VERIFIED_IMAGE_ANNOTATION


def test_digest_pinning_is_advisory_unless_the_base_requires_it():
    """security.requireImageDigests makes images-pinned-by-digest mandatory; in a pull request
    the base decides, so a change cannot switch the rule off for itself."""
    required = load_settings(cfg(ascendWeight="5", security={"requireImageDigests": True}))
    level = "enforcementLevel"
    assert single_pack_config(DEFAULTS, 5)["images-pinned-by-digest"] == {level: "advisory"}
    assert single_pack_config(required, 5)["images-pinned-by-digest"] == {level: "mandatory"}
    assert single_pack_config(DEFAULTS, 5, base=required)["images-pinned-by-digest"][level] == (
        "mandatory"
    )
    assert single_pack_config(required, 5, base=DEFAULTS)["images-pinned-by-digest"][level] == (
        "advisory"
    )


def test_route_weights_config_comes_from_the_program():
    """`route-weights-valid` checks the split the program emits: both subsets, summing to 100."""
    config = single_pack_config(DEFAULTS, 5)
    assert config["route-weights-valid"] == {
        "totalWeight": 100,
        "nvidiaSubset": "nvidia",
        "ascendSubset": "ascend",
        "ascendResource": "huawei.com/Ascend910",
    }
    assert sum(route_weights(5).values()) == config["route-weights-valid"]["totalWeight"]


def test_first_deploy_and_max_step():
    settings = load_settings(cfg(ascendWeight="5", policy={"maxStep": 10}))
    config = single_pack_config(settings, None)
    assert "previousWeight" not in config["no-unsafe-weight-jump"]
    assert config["no-unsafe-weight-jump"]["maxStep"] == 10


def test_step_limit_comes_from_the_base_not_the_head():
    """A head that widens the ladder or maxStep does not widen the step it is judged by."""
    base = load_settings(cfg(ascendWeight="5"))
    head = load_settings(cfg(ascendWeight="100", ladder=[0, 5, 100], policy={"maxStep": 100}))
    config = single_pack_config(head, 5, base)
    assert config["no-unsafe-weight-jump"]["ladder"] == [0, 5, 20, 50, 80, 100]
    assert "maxStep" not in config["no-unsafe-weight-jump"]
    assert config["ascend-weight-on-ladder"]["ladder"] == [0, 5, 20, 50, 80, 100]
    approved = single_pack_config(head, 5, base, owner_approved=True)  # the owners' new envelope
    assert approved["no-unsafe-weight-jump"]["ladder"] == [0, 5, 100]
    assert approved["safety-envelope-unchanged"]["ownerApproved"] is True
    tighter = load_settings(cfg(ascendWeight="5", policy={"maxStep": 10}))
    assert single_pack_config(head, 5, tighter)["no-unsafe-weight-jump"]["maxStep"] == 10


def test_without_a_base_the_step_limit_is_the_stack_file_s():
    head = load_settings(cfg(ascendWeight="5", ladder=[0, 5, 100], policy={"maxStep": 100}))
    config = single_pack_config(head, None)
    assert config["no-unsafe-weight-jump"]["ladder"] == [0, 5, 100]
    assert config["no-unsafe-weight-jump"]["maxStep"] == 100
    assert "previousAscendImage" not in config["precision-verified-before-promotion"]


def test_previous_ascend_image_comes_from_the_base():
    base = load_settings(cfg(ascendWeight="50"))
    head = load_settings(
        cfg(
            ascendWeight="20",
            ascend={"image": "registry/inference-service:v9.9.9-npu"},
            nvidia={"image": "registry/inference-service:v9.9.9-cuda"},
        )
    )
    config = single_pack_config(head, 50, base)["precision-verified-before-promotion"]
    assert config["previousAscendImage"] == "registry/inference-service:v1.2.3-npu"
    assert config["previousWeight"] == 50


def test_pool_sizes_come_from_the_pools_settings():
    """`pool-capacity` gets each pool's node count and acceleratorsPerNode from the settings."""
    ascend = {
        "pool": {
            "name": "npu",
            "nodes": ["npu-01", "npu-02", "npu-03", "npu-04"],
            "acceleratorsPerNode": 16,
        }
    }
    config = single_pack_config(load_settings(cfg(ascendWeight="5", ascend=ascend)), 5)
    assert config["pool-capacity"] == {
        "poolSizes": {
            "nvidia": {"nodes": 3, "acceleratorsPerNode": 8},
            "npu": {"nodes": 4, "acceleratorsPerNode": 16},
        },
        "acceleratorPools": {"nvidia.com/gpu": "nvidia", "huawei.com/Ascend910": "npu"},
    }


def test_bad_release_pattern_is_a_settings_error_naming_the_key():
    with pytest.raises(SettingsError, match=r"dualstack-inference:policy\.releaseTagPattern"):
        load_settings(cfg(ascendWeight="5", policy={"releaseTagPattern": r"^v\d+$"}))


@pytest.mark.parametrize(("text", "weight"), [("5\n", 5), ("20.0", 20), ("0", 0), ("100", 100)])
def test_parse_weight(text, weight):
    assert parse_weight(text, "src") == weight


@pytest.mark.parametrize("text", ["abc", '"5"', "5.5", "150", "-1", "true", "null", "NaN", ""])
def test_parse_weight_rejects_non_weights(text):
    with pytest.raises(StackOutputError, match=r"^src returned .* not a weight 0\.\.100$"):
        parse_weight(text, "src")


@pytest.fixture
def fake_pulumi(tmp_path, monkeypatch):
    """Put a `pulumi` script on PATH that logs its arguments and answers as told."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "pulumi-args"

    def install(body: str) -> Path:
        script = bindir / "pulumi"
        script.write_text(f'#!/bin/sh\necho "$@" > {log}\n{body}\n', encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        return log

    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return install


def test_reads_the_deployed_weight(fake_pulumi, tmp_path):
    log = fake_pulumi("echo 5")
    assert read_deployed_weight(tmp_path, "prod") == 5
    assert log.read_text().split() == [
        "stack",
        "output",
        "ascendWeight",
        "--json",
        "--stack",
        "prod",
    ]


def test_a_failing_cli_is_one_clear_error(fake_pulumi, tmp_path):
    fake_pulumi(
        'echo "error: current stack does not have output property ascendWeight" >&2; exit 255'
    )
    with pytest.raises(StackOutputError) as caught:
        read_deployed_weight(tmp_path, "prod")
    message = str(caught.value)
    assert "`pulumi stack output ascendWeight --stack prod` failed" in message
    assert "does not have output property ascendWeight" in message
    assert "--first-deploy" in message


def test_a_hanging_cli_times_out(fake_pulumi, tmp_path):
    """A child of the CLI holding the pipes open is killed too (`sleep` is not exec'd)."""
    fake_pulumi("sleep 30")
    with pytest.raises(StackOutputError, match=r"gave no answer within 0\.3 s"):
        read_deployed_weight(tmp_path, "prod", timeout=0.3)


def test_a_missing_cli_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(StackOutputError, match="not on PATH; pass --previous-weight N"):
        read_deployed_weight(tmp_path, "prod")


def test_command_writes_the_file_from_stack_output(fake_pulumi, git_repo, tmp_path, capsys):
    fake_pulumi("echo 20")
    out = tmp_path / "policy-config.json"
    code = main(
        [
            "-C",
            str(git_repo),
            "policy-config",
            "--stack",
            "prod",
            "--stack",
            "prod",
            "--from-stack-output",
            "--base",
            "main",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    written = json.loads(out.read_text())
    assert written["no-unsafe-weight-jump"]["previousWeight"] == 20
    assert written["rollback-capacity"]["totalReplicas"] == 4
    assert "previous weight 20% (pulumi stack output ascendWeight)" in capsys.readouterr().err


def test_command_fails_with_exit_2_and_writes_nothing(fake_pulumi, git_repo, tmp_path, capsys):
    fake_pulumi("echo abc")
    out = tmp_path / "policy-config.json"
    code = main(
        [
            "-C",
            str(git_repo),
            "policy-config",
            "--stack",
            "prod",
            "--stack",
            "prod",
            "--from-stack-output",
            "--base",
            "main",
            "--output",
            str(out),
        ]
    )
    assert code == 2
    assert not out.exists()
    assert capsys.readouterr().err.startswith(
        "error: `pulumi stack output ascendWeight --stack prod` returned 'abc'"
    )


def test_command_by_hand_and_first_deploy(git_repo, capsys):
    args = ["-C", str(git_repo), "policy-config", "--stack", "prod", "--base", "main"]
    assert main([*args, "--previous-weight", "50"]) == 0
    assert json.loads(capsys.readouterr().out)["no-unsafe-weight-jump"]["previousWeight"] == 50
    assert main([*args, "--first-deploy"]) == 0
    assert "previousWeight" not in json.loads(capsys.readouterr().out)["no-unsafe-weight-jump"]


def test_command_takes_the_step_limit_and_image_from_base(git_repo, tmp_path, capsys):
    """The PR's own stack file (ladder [0, 5, 100], maxStep 100, new image) decides nothing."""
    path = git_repo / "Pulumi.prod.yaml"
    text = path.read_text(encoding="utf-8").replace('ascendWeight: "5"', 'ascendWeight: "100"')
    path.write_text(
        text
        + "  dualstack-inference:ladder: [0, 5, 100]\n"
        + "  dualstack-inference:policy: {maxStep: 100}\n"
        + "  dualstack-inference:ascend: {image: registry/inference-service:v9.9.9-npu}\n",
        encoding="utf-8",
    )
    out = tmp_path / "policy-config.json"
    args = [
        "-C",
        str(git_repo),
        "policy-config",
        "--stack",
        "prod",
        "--previous-weight",
        "5",
        "--output",
        str(out),
    ]
    assert main([*args, "--base", "main"]) == 0
    written = json.loads(out.read_text())
    assert written["no-unsafe-weight-jump"] == {
        "ladder": [0, 5, 20, 50, 80, 100],
        "previousWeight": 5,
        "ascendSubset": "ascend",
        "ascendResource": "huawei.com/Ascend910",
        "testerPinning": {"header": "x-dualstack-hardware", "nvidia": "nvidia", "ascend": "ascend"},
    }
    assert written["precision-verified-before-promotion"]["previousAscendImage"] == (
        "registry/inference-service:v1.2.3-npu"
    )
    assert "facts from the base (main" in capsys.readouterr().err
    envelope = written["safety-envelope-unchanged"]["envelopeChanges"]
    assert [change["fact"] for change in envelope] == ["ladder", "policy.maxStep"]
    assert main(args) == 2  # without a base nothing judges: nothing is written
    assert "one of the arguments --base --head is required" in capsys.readouterr().err


def test_command_with_a_base_lacking_the_stack_is_a_first_deploy(git_repo, capsys):
    git(git_repo, "checkout", "-q", "-b", "new-stack")
    (git_repo / "Pulumi.prod.yaml").rename(git_repo / "Pulumi.lab.yaml")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "only lab")
    (git_repo / "Pulumi.lab.yaml").rename(git_repo / "Pulumi.prod.yaml")
    args = [
        "-C",
        str(git_repo),
        "policy-config",
        "--stack",
        "prod",
        "--first-deploy",
        "--base",
        "new-stack",
    ]
    assert main(args) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["no-unsafe-weight-jump"]["ladder"] == [0, 5, 20, 50, 80, 100]
    assert "previousAscendImage" not in written["precision-verified-before-promotion"]
    assert written["precision-verified-before-promotion"]["verifiedImages"] == []
    assert written["safety-envelope-unchanged"]["envelopeChanges"][0] == {
        "fact": "Pulumi.prod.yaml",
        "before": "absent",
        "after": "added",
        "kind": "stack",
    }


@pytest.mark.parametrize(
    ("base_yaml", "message"),
    [
        (None, "git ref 'nope' is not a commit"),
        (
            'config:\n  dualstack-inference:ascendWeight: "33"\n',
            "does not render under the base's own code",
        ),
    ],
)
def test_command_fails_closed_on_a_bad_base(git_repo, tmp_path, capsys, base_yaml, message):
    if base_yaml is not None:
        git(git_repo, "checkout", "-q", "-b", "nope")
        (git_repo / "Pulumi.prod.yaml").write_text(base_yaml, encoding="utf-8")
        git(git_repo, "commit", "-qam", "broken prod")
        git(git_repo, "checkout", "-q", "main")
    out = tmp_path / "policy-config.json"
    args = [
        "policy-config",
        "--stack",
        "prod",
        "--previous-weight",
        "5",
        "--base",
        "nope",
        "--output",
        str(out),
    ]
    assert main(["-C", str(git_repo), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "policy-config: one of the arguments --from-stack-output --previous-weight"),
        (["--previous-weight", "150"], "policy-config: argument --previous-weight: 150 is outside"),
        (["--previous-weight", "x"], "policy-config: argument --previous-weight: 'x': expected a"),
        (["--first-deploy", "--previous-weight", "5"], "not allowed with argument"),
        (["--previous-weight", "33"], "--previous-weight 33: not a ladder step of stack prod"),
        (
            ["--previous-weight", "5", "--head", "."],
            "argument --base: not allowed with argument --head",
        ),
    ],
)
def test_command_rejects_bad_flags_in_one_line(git_repo, tmp_path, args, message, capsys):
    out = tmp_path / "policy.json"
    argv = ["-C", str(git_repo), "policy-config", "--stack", "prod", *args, "--base", "main"]
    assert main([*argv, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert err.count("\n") == 1
    assert not out.exists()


def test_program_records_the_verified_image_on_the_ascend_deployment(render_objects):
    verified = "registry/inference-service:v1.2.3-npu"
    objects = render_objects(cfg(ascendWeight="5", verifiedAscendImage=verified))
    ascend = find(objects, "Deployment", "inference-green")
    assert ascend["metadata"]["annotations"] == {VERIFIED_IMAGE_ANNOTATION: verified}
    assert "annotations" not in find(objects, "Deployment", "inference-blue")["metadata"]
    unverified = render_objects(cfg(ascendWeight="5"))
    assert "annotations" not in find(unverified, "Deployment", "inference-green")["metadata"]
