"""A pull request never judges itself: the four classes of issue 11, each refused by name, and
the legitimate steps that must pass. Real git repositories with fixture stack files
(`tests.support.judge_repos`); the base on `main`, the head in the working tree.

1. self-asserted evidence, 2. self-widened facts, 3. code in the PR judging the PR (in
`test_judge_protocol.py`, which runs the head's own code), 4. process: widening the ladder or
`maxStep` alone.
"""

from __future__ import annotations

import pytest

from dualstack.repo.stackfile import set_config_values
from tests.support.judge_repos import (
    PROD,
    STAGING,
    V123,
    V124,
    commit,
    failed_policies,
    make_repo,
    preview,
    stack_text,
    write_stack,
)

ENVELOPE = "safety-envelope-unchanged"


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path)


def at(repo, weight, **keys):
    """Commit prod at `weight` (plus `keys`) on main: the base of the next pull request."""
    write_stack(repo, "prod", {**PROD, "ascendWeight": str(weight), **keys})
    commit(repo, f"prod at {weight}")


def head(repo, **keys):
    """The pull request: set project keys of prod in the working tree."""
    for key, value in keys.items():
        set_config_values(repo, "prod", {key: value})


# ------------------------------------------------------------- 1. self-asserted evidence


@pytest.mark.parametrize("weight", ["5", "20"])
def test_a_pr_cannot_verify_its_own_new_image(repo, capsys, weight):
    head(
        repo,
        ascendWeight=weight,
        nvidia={"image": V124["nvidia"]},
        ascend={"image": V124["ascend"]},
        verifiedAscendImage=V124["ascend"],
    )
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {"precision-verified-before-promotion", ENVELOPE}
    assert f"Ascend image: {V124['ascend']} (NOT verified at the base)" in out
    assert (
        f"serves {V124['nvidia']} + {V124['ascend']} to live traffic, but the base's "
        f"precision-verified pairs are {V123['nvidia']} + {V123['ascend']}"
    ) in err
    assert f"verifiedAscendImage: (unset) -> {V124['ascend']}" in out


def test_a_pr_cannot_add_its_own_pair_to_the_history(repo, capsys):
    head(
        repo,
        nvidia={"image": V124["nvidia"]},
        ascend={"image": V124["ascend"]},
        verifiedImages=[V123, V124],
    )
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {"precision-verified-before-promotion", ENVELOPE}
    assert "verifiedImages: " in out and "needs the owners' approval" in out


def test_a_foreign_registry_is_not_verified_by_claiming_it(repo, capsys):
    foreign = {
        "nvidia": "evil.example/inference-service:v1.2.3-cuda",
        "ascend": "evil.example/inference-service:v1.2.3-npu",
    }
    head(
        repo,
        ascendWeight="20",
        nvidia={"image": foreign["nvidia"]},
        ascend={"image": foreign["ascend"]},
        verifiedImages=[foreign],
        verifiedAscendImage=foreign["ascend"],
    )
    code, _out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {"precision-verified-before-promotion", ENVELOPE}
    assert (
        "raising the Ascend weight from 5% to 20% while replacing the deployed NVIDIA image "
        f"{V123['nvidia']}: Deployment inference/inference-green "
    ) in err


# ------------------------------------------------------------- 2. self-widened facts


def test_total_replicas_1_cannot_starve_nvidia(repo, capsys):
    head(repo, capacity={"totalReplicas": 1})
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE, "rollback-capacity"}
    assert "capacity.totalReplicas: 4 -> 1" in out
    # NVIDIA serves, so it runs the minimum of 2 pods: still not the base's 4
    assert "Deployment inference/inference-blue has 2 replicas while Ascend takes 5%" in err
    assert "keep 4 replicas" in err  # the base's totalReplicas


def test_a_capacity_ratio_of_10_cannot_serve_80_percent_on_two_pods(repo, capsys):
    # The head's ratio 10 gives 4 x 0.8 x 1.2 / 10 = 0.38 pods: the serving minimum, 2; the
    # base's ratio 1 needs 4 x 0.8 = 3.2, so 4.
    at(repo, 50)
    head(repo, ascendWeight="80", capacity={"ascendCapacityRatio": 10})
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert "Replicas: nvidia 4, ascend 3 -> 2" in out
    assert failed_policies(err) == {ENVELOPE, "rollback-capacity"}
    assert (
        "Deployment inference/inference-green has 2 replicas for 80% of traffic: at "
        "ascendCapacityRatio=1 its share of totalReplicas=4 needs at least 4"
    ) in err


def test_accelerators_per_node_16_on_8_npu_nodes(repo, capsys):
    at(repo, 80, capacity={"totalReplicas": 14})
    pool = {"name": "ascend", "nodes": ["ascend-01", "ascend-02"], "acceleratorsPerNode": 16}
    head(repo, ascendWeight="100", ascend={"pool": pool})
    code, _out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE, "pool-capacity"}
    assert "pool 'ascend' is too small: a rollout takes up to 17 huawei.com/Ascend910" in err
    assert "but the pool has 16 (2 nodes x 8 acceleratorsPerNode)" in err


def test_relabelled_pool_nodes_are_refused_before_any_policy(repo, capsys):
    """`ascend.pool.labels: {pool: retired}` would make the Ascend pods unschedulable; the
    settings refuse the program's own label key (exit 2, nothing judged)."""
    pool = {"name": "ascend", "nodes": ["ascend-01", "ascend-02"], "labels": {"pool": "retired"}}
    head(repo, ascend={"pool": pool})
    code, out, err = preview(repo, capsys)
    assert (code, out) == (2, "")
    assert err == (
        "error: dualstack-inference:ascend.pool.labels: label 'pool' is set by the program; "
        "choose another key\n"
    )


def test_other_pool_labels_are_an_envelope_change(repo, capsys):
    pool = {"name": "ascend", "nodes": ["ascend-01", "ascend-02"], "labels": {"npu-model": "x"}}
    head(repo, ascend={"pool": pool})
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert "ascend.pool.labels.npu-model: 910B -> x" in out


def test_an_accelerator_resource_the_nodes_lack(repo, capsys):
    head(repo, ascend={"acceleratorResource": "huawei.com/Ascend310"})
    code, _out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE, "accelerator-placement"}
    assert (
        "Deployment inference/inference-green selects pool 'ascend' but requests none of its "
        "accelerators (huawei.com/Ascend910)"
    ) in err


@pytest.mark.parametrize("path", ["/", "/var/lib/kubelet"])
def test_a_pr_cannot_widen_the_driver_allow_list(repo, capsys, path):
    head(repo, ascend={"driverHostPath": path})
    code, _out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE, "workload-security-baseline"}
    assert f"mounts hostPath {path} (volume 'accelerator-driver'); only the driver paths " in err
    assert "/usr/local/Ascend/driver may be mounted" in err


def test_a_loosened_release_tag_pattern(repo, capsys):
    head(
        repo,
        policy={"releaseTagPattern": r"^(?P<release>.*)$"},
        nvidia={"image": V124["nvidia"]},
    )
    code, _out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {
        ENVELOPE,
        "image-pair-consistent",
        "precision-verified-before-promotion",
    }
    assert "the backends serve different releases: nvidia " in err


def test_the_prod_stack_replaced_by_staging_s(repo, capsys):
    (repo / "Pulumi.prod.yaml").write_text(stack_text(STAGING), encoding="utf-8")
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE, "rollback-capacity"}
    assert "namespace: inference -> inference-staging" in out
    assert "capacity.totalReplicas: 4 -> 2" in out


@pytest.mark.parametrize(
    ("keys", "fact"),
    [
        ({"namespace": "inference-other"}, "namespace: inference -> inference-other"),
        ({"nvidia": {"version": "blue2"}}, "nvidia.version: blue -> blue2"),
        (
            {"istio": {"hosts": ["*.svc.cluster.local"]}},
            'istio.hosts: [] -> ["*.svc.cluster.local"]',
        ),
        ({"precisionCheck": {"enabled": False}}, "precisionCheck.enabled: true -> false"),
        ({"precisionCheck": {"minMatchRate": 50}}, "precisionCheck.minMatchRate: 100 -> 50"),
        ({"monitoring": {"enabled": False}}, "monitoring.enabled: true -> false"),
    ],
)
def test_envelope_keys_need_the_owners(repo, capsys, keys, fact):
    head(repo, **keys)
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert ENVELOPE in failed_policies(err)
    assert fact in out
    assert f"{fact}" in err


def test_another_cluster_context_is_an_envelope_change(repo, capsys):
    write_stack(repo, "prod", PROD, {"kubernetes:context": "other-cluster"})
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert "kubernetes:context: (unset) -> other-cluster" in out


def prepend(repo, stack, text):
    """Put `text` (top-level keys) before the `config:` mapping of `Pulumi.<stack>.yaml`."""
    path = repo / f"Pulumi.{stack}.yaml"
    path.write_text(text + path.read_text(encoding="utf-8"), encoding="utf-8")


@pytest.mark.parametrize(
    ("top", "fact"),
    [
        (
            "environment:\n  - team/overrides\n",
            'Pulumi.prod.yaml environment: (unset) -> ["team/overrides"]',
        ),
        (
            "environment:\n  values:\n    pulumiConfig:\n      kubernetes:context: other\n",
            'Pulumi.prod.yaml environment: (unset) -> {"values": {"pulumiConfig": '
            '{"kubernetes:context": "other"}}}',
        ),
        (
            "secretsprovider: awskms://alias/other\n",
            "Pulumi.prod.yaml secretsprovider: (unset) -> awskms://alias/other",
        ),
    ],
)
def test_stack_file_keys_outside_config_need_the_owners(repo, capsys, top, fact):
    """An ESC `environment` feeds config to `pulumi up` that no judge sees; the key itself is
    the envelope, even in a plain 5 -> 20 step."""
    head(repo, ascendWeight="20")
    prepend(repo, "prod", top)
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert f"  {fact}" in out


def test_an_environment_the_base_already_imports_is_no_change(repo, capsys):
    prepend(repo, "prod", "environment:\n  - team/prod\n")
    commit(repo, "the owners: prod imports team/prod")
    head(repo, ascendWeight="20")
    code, out, err = preview(repo, capsys)
    assert code == 0, out + err
    assert "Safety envelope: unchanged; the step changes ascendWeight 5 -> 20" in out


# ------------------------------------------------------------- 4. process


@pytest.mark.parametrize(
    ("keys", "fact"),
    [
        ({"ladder": [0, 5, 100]}, "ladder: [0, 5, 20, 50, 80, 100] -> [0, 5, 100]"),
        ({"policy": {"maxStep": 100}}, "policy.maxStep: (unset) -> 100"),
    ],
)
def test_widening_the_step_alone_needs_the_owners(repo, capsys, keys, fact):
    head(repo, **keys)
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert f"  FAIL {ENVELOPE} [mandatory]: {fact}: a change of the safety envelope" in out


def test_an_approved_ladder_takes_effect_in_the_next_pr(repo, capsys):
    head(repo, ladder=[0, 5, 100])
    code, out, _err = preview(repo, capsys, "--owner-approved")
    assert code == 0, out
    assert "Safety envelope: 1 change, approved by the owners (--owner-approved)" in out
    commit(repo, "owners: ladder [0, 5, 100]")
    head(repo, ascendWeight="100")
    code, out, _err = preview(repo, capsys)
    assert code == 0, out
    assert "Safety envelope: unchanged; the step changes ascendWeight 5 -> 100" in out


@pytest.mark.parametrize("stack", ["prod", "staging"])
def test_two_stacks_raised_in_one_pr_need_the_owners(repo, capsys, stack):
    """prod 5 -> 20 and staging 20 -> 50 at once: each alone is a rung, together they skip
    the data gate staging's rung gives before prod. Each stack's preview names the other."""
    head(repo, ascendWeight="20")
    set_config_values(repo, "staging", {"ascendWeight": "50"})
    code, out, err = preview(repo, capsys, stack=stack)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    other = "staging" if stack == "prod" else "prod"
    assert f"  file Pulumi.{other}.yaml: at base -> modified" in out


def test_rolling_back_every_stack_in_one_pr_passes(repo, capsys):
    """`dualstack rollback --all` commits every stack's lower weight at once: no envelope."""
    head(repo, ascendWeight="0")
    set_config_values(repo, "staging", {"ascendWeight": "5"})
    for stack in ("prod", "staging"):
        code, out, err = preview(repo, capsys, stack=stack)
        assert code == 0, out + err
        moved = "5 -> 0" if stack == "prod" else "20 -> 5"
        assert f"Safety envelope: unchanged; the step changes ascendWeight {moved}" in out


# ------------------------------------------------------------- what must pass


@pytest.mark.parametrize(("before", "after"), [(0, 5), (5, 20), (20, 50), (80, 100)])
def test_legitimate_rungs_pass(repo, capsys, before, after):
    at(repo, before)
    head(repo, ascendWeight=str(after))
    code, out, err = preview(repo, capsys)
    assert code == 0, out + err
    assert f"Ascend weight: {before}% -> {after}%" in out
    assert f"Safety envelope: unchanged; the step changes ascendWeight {before} -> {after}" in out


@pytest.mark.parametrize(("before", "after"), [(100, 80), (80, 0), (50, 20), (20, 5), (100, 0)])
def test_any_decrease_passes(repo, capsys, before, after):
    at(repo, before)
    head(repo, ascendWeight=str(after))
    code, out, err = preview(repo, capsys)
    assert code == 0, out + err


def test_an_approved_envelope_change_with_a_decrease_passes(repo, capsys):
    at(repo, 50)
    head(repo, ascendWeight="20", capacity={"totalReplicas": 6})
    code, out, err = preview(repo, capsys, "--owner-approved")
    assert code == 0, out + err
    assert "Safety envelope: 1 change, approved by the owners (--owner-approved)" in out
    assert f"  ok   {ENVELOPE} [mandatory]" in out


@pytest.mark.parametrize(
    ("keys", "extra", "fact"),
    [
        ({"ladder": [0, 5, 100]}, None, "ladder: [0, 5, 20, 50, 80, 100] -> [0, 5, 100]"),
        ({"policy": {"maxStep": 100}}, None, "policy.maxStep: (unset) -> 100"),
        ({}, {"kubernetes:context": "other-cluster"}, "kubernetes:context: (unset) -> other"),
    ],
)
def test_a_decrease_does_not_carry_an_unapproved_envelope_change(repo, capsys, keys, extra, fact):
    """20 -> 5 with the ladder widened, then 5 -> 100 on the widened base: two green PRs
    and no owner. The decrease alone passes; with an envelope change it needs the owners."""
    at(repo, 20)
    write_stack(repo, "prod", {**PROD, "ascendWeight": "5", **keys}, extra)
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert f"  FAIL {ENVELOPE} [mandatory]: {fact}" in out


EVIL_NVIDIA = "evil.example/inference-service:v1.2.3-cuda"


@pytest.mark.parametrize(("before", "after"), [(20, 5), (20, 0)])
def test_a_decrease_may_not_swap_the_nvidia_image(repo, capsys, before, after):
    """Issue 28: 20 -> 5 (or 0) with the NVIDIA image, which serves the rest, moved to another
    registry is no rollback: the image is named by no pair the base recorded."""
    at(repo, before)
    head(repo, ascendWeight=str(after), nvidia={"image": EVIL_NVIDIA})
    code, _out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {"precision-verified-before-promotion"}
    assert EVIL_NVIDIA in err


def test_the_single_image_record_accepts_no_other_nvidia_image(repo, capsys):
    """The older `verifiedAscendImage` names no NVIDIA image: only the deployed one counts."""
    at(repo, 5, verifiedImages=[], verifiedAscendImage=V123["ascend"])
    head(repo, nvidia={"image": EVIL_NVIDIA})
    code, _out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {"precision-verified-before-promotion"}
    assert f"serves {EVIL_NVIDIA} + {V123['ascend']} to live traffic" in err
    head(repo, nvidia={"image": V123["nvidia"]}, ascendWeight="20")
    code, out, err = preview(repo, capsys)
    assert code == 0, out + err


def test_an_approved_decrease_may_not_swap_the_nvidia_image(repo, capsys):
    at(repo, 50)
    head(repo, ascendWeight="20", capacity={"totalReplicas": 6}, nvidia={"image": EVIL_NVIDIA})
    code, _out, err = preview(repo, capsys, "--owner-approved")
    assert code == 1
    assert ENVELOPE in failed_policies(err)
    assert f"changes the nvidia image {V123['nvidia']} -> {EVIL_NVIDIA}" in err


def test_the_stack_file_as_a_symlink_is_refused_with_one_line(repo, capsys):
    """Issue 28: `Pulumi.prod.yaml` as a symlink into `docs/` would make every later change of
    prod a docs change; the judge reads no stack file through a symlink (exit 2)."""
    stack = repo / "Pulumi.prod.yaml"
    (repo / "docs").mkdir(exist_ok=True)
    (repo / "docs" / "prod.yaml").write_text(stack_text(PROD), encoding="utf-8")
    stack.unlink()
    stack.symlink_to("docs/prod.yaml")
    code, _out, err = preview(repo, capsys)
    assert code == 2
    assert (
        "Pulumi.prod.yaml: a symlink (to docs/prod.yaml), not a regular file; a stack file "
        "must be a regular file"
    ) in err


def test_a_yml_beside_the_stack_file_is_an_envelope_change(repo, capsys):
    """Issue 28: `Pulumi.prod.yml` (Pulumi may read it) was counted as prod, then skipped."""
    (repo / "Pulumi.prod.yml").write_text(stack_text({**PROD, "ascendWeight": "100"}))
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert "file Pulumi.prod.yml: absent -> added" in out


def raw_weight(repo, written):
    """The head's prod stack with `ascendWeight` written exactly as `written` (unquoted)."""
    text = stack_text(PROD).replace("ascendWeight: '5'", f"ascendWeight: {written}")
    assert f"ascendWeight: {written}" in text
    (repo / "Pulumi.prod.yaml").write_text(text, encoding="utf-8")


def test_a_weight_in_another_form_than_plain_decimal_is_refused(repo, capsys):
    """Issue 28: `ascendWeight: 020` was judged as 20; Pulumi's Go YAML reads 16."""
    raw_weight(repo, "020")
    code, _out, err = preview(repo, capsys)
    assert code != 0
    assert "ascendWeight = '020': expected a whole number in plain decimal digits" in err


def test_a_str_tagged_weight_is_a_plain_step(repo, capsys):
    """Issue 28: `!!str 20` is the text "20", the step `pulumi config set` writes."""
    raw_weight(repo, "!!str 20")
    code, out, err = preview(repo, capsys)
    assert code == 0, out + err
    assert "Ascend weight: 5% -> 20%" in out


def test_an_image_rollback_to_an_earlier_verified_pair_passes(repo, capsys):
    at(
        repo,
        20,
        nvidia={"image": V124["nvidia"]},
        ascend={"image": V124["ascend"]},
        verifiedImages=[V123, V124],
    )
    head(repo, nvidia={"image": V123["nvidia"]}, ascend={"image": V123["ascend"]})
    code, out, err = preview(repo, capsys)
    assert code == 0, out + err
    assert f"Ascend image: {V123['ascend']} (precision-verified at the base)" in out


def test_a_step_with_an_image_pair_the_base_verified_passes(repo, capsys):
    at(repo, 5, verifiedImages=[V123, V124])
    head(
        repo, ascendWeight="20", nvidia={"image": V124["nvidia"]}, ascend={"image": V124["ascend"]}
    )
    code, out, err = preview(repo, capsys)
    assert code == 0, out + err


def test_an_approved_envelope_change_without_a_rise_passes(repo, capsys):
    at(repo, 20)
    head(repo, capacity={"totalReplicas": 6})
    code, out, err = preview(repo, capsys, "--owner-approved")
    assert code == 0, out + err
    assert "capacity.totalReplicas: 4 -> 6" in out
    assert "Replicas: nvidia 4 -> 6, ascend 2" in out  # 6 x 0.2 x 1.2 = 1.44: 2 either way


def test_the_same_approved_change_with_a_rise_is_refused(repo, capsys):
    at(repo, 20)
    head(repo, ascendWeight="50", capacity={"totalReplicas": 6})
    code, _out, err = preview(repo, capsys, "--owner-approved")
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert (
        "the owners approved envelope changes (capacity.totalReplicas: 4 -> 6), but the "
        "same pull request raises the Ascend weight from 20% to 50%"
    ) in err


def test_an_approved_change_may_not_switch_images_either(repo, capsys):
    at(repo, 20, verifiedImages=[V123, V124])
    head(
        repo,
        capacity={"totalReplicas": 6},
        nvidia={"image": V124["nvidia"]},
        ascend={"image": V124["ascend"]},
    )
    code, _out, err = preview(repo, capsys, "--owner-approved")
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert f"changes the ascend image {V123['ascend']} -> {V124['ascend']}" in err


# ------------------------------------------------------------- both routers (issue 14)


def test_the_base_judges_the_head_s_httproute(repo, capsys):
    """Under `router: gateway-api` the head's HTTPRoute reaches the base's pack: a step passes
    (its backends and their verified pair found through the route), a skip is refused by name."""
    at(repo, 5, router="gateway-api")
    head(repo, ascendWeight="20")
    code, out, err = preview(repo, capsys)
    assert code == 0, out + err
    head(repo, ascendWeight="100")
    code, _out, err = preview(repo, capsys)
    assert code == 1
    assert "no-unsafe-weight-jump" in failed_policies(err)
    assert "HTTPRoute inference/inference-route" in err
    assert "raises the Ascend weight from 5% to 100%" in err


def test_switching_routers_is_an_envelope_change(repo, capsys):
    at(repo, 5)
    head(repo, router="gateway-api")
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert "router: istio -> gateway-api" in out
    code, out, err = preview(repo, capsys, "--owner-approved")
    assert code == 0, out + err
    head(repo, ascendWeight="20")
    code, _out, err = preview(repo, capsys, "--owner-approved")
    assert code == 1
    assert "raises the Ascend weight from 5% to 20%" in err


@pytest.mark.parametrize(
    ("key", "value", "fact"),
    [
        ("mirrorPercent", "10", "mirrorPercent: 0 -> 10"),
        ("bakeTime", "1h", "bakeTime: 24h -> 1h"),
        ("testerPinning", {"enabled": False}, "testerPinning.enabled: true -> false"),
    ],
)
def test_the_shadow_rung_pins_and_bake_time_need_the_owners(repo, capsys, key, value, fact):
    at(repo, 0)
    head(repo, **{key: value})
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert fact in out


def test_leaving_the_shadow_rung_is_a_plain_step(repo, capsys):
    at(repo, 0, mirrorPercent="10")
    head(repo, ascendWeight="5", mirrorPercent="0")
    code, out, err = preview(repo, capsys)
    assert code == 0, out + err
    assert failed_policies(err) == set()


def test_a_rollback_carrying_a_router_switch_needs_the_owners(repo, capsys):
    """A decrease alone is never blocked; a decrease does not carry an envelope change past the
    owners (a router switch unapproved), and the same switch approved passes."""
    at(repo, 20, router="gateway-api")
    head(repo, ascendWeight="5", router="istio")
    code, out, err = preview(repo, capsys)
    assert code == 1
    assert failed_policies(err) == {ENVELOPE}
    assert "router: gateway-api -> istio" in out
    code, out, err = preview(repo, capsys, "--owner-approved")
    assert code == 0, out + err


def test_a_rollback_under_gateway_api_alone_is_never_blocked(repo, capsys):
    at(repo, 20, router="gateway-api")
    head(repo, ascendWeight="0")
    code, out, err = preview(repo, capsys)
    assert code == 0, out + err
    assert failed_policies(err) == set()
