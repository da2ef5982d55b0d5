"""The safety envelope's facts: config changes (as written and as resolved) and program files
changed in a real git repository."""

from __future__ import annotations

import json

from components.settings import load_settings
from dualstack.offline.envelope import (
    EnvelopeChange,
    config_changes,
    envelope_changes,
    file_changes,
    flatten,
    other_stack_changes,
)
from tests.conftest import cfg, git


def describe(changes):
    return [change.describe() for change in changes]


def test_flatten_walks_mappings_and_decodes_pulumi_json():
    config = {
        "dualstack-inference:capacity": json.dumps({"totalReplicas": 2}),
        "dualstack-inference:ladder": [0, 50, 100],
        "kubernetes:kubeconfig": {"secure": "AAAB"},
    }
    assert flatten(config) == {
        "dualstack-inference:capacity.totalReplicas": 2,
        "dualstack-inference:ladder": [0, 50, 100],
        "kubernetes:kubeconfig": {"secure": "AAAB"},
    }


def test_the_step_facts_are_no_envelope_change():
    base = cfg(ascendWeight="5")
    head = cfg(
        ascendWeight="20",
        nvidia={"image": "registry/inference-service:v1.2.4-cuda"},
        ascend={"image": "registry/inference-service:v1.2.4-npu"},
    )
    assert config_changes(base, head) == []
    assert config_changes(base, head, load_settings(base), load_settings(head)) == []


def test_values_compare_as_pulumi_config_stores_them():
    assert (
        config_changes(
            cfg(ascendWeight="5", capacity={"totalReplicas": 4}),
            cfg(ascendWeight="5", capacity={"totalReplicas": "4"}),
        )
        == []
    )


def test_as_written_and_as_resolved():
    base, head = cfg(ascendWeight="5"), cfg(ascendWeight="5", capacity={"totalReplicas": 4})
    assert describe(config_changes(base, head)) == ["capacity.totalReplicas: (unset) -> 4"]
    resolved = config_changes(base, head, load_settings(base), load_settings(head))
    assert resolved == []  # an explicit default changes nothing


def test_every_other_key_is_a_fact_with_its_kind():
    base = cfg(ascendWeight="5", verifiedAscendImage="registry/inference-service:v1.2.3-npu")
    head = {
        **cfg(ascendWeight="5", verifiedAscendImage="registry/inference-service:v9-npu"),
        "kubernetes:context": "other",
        **cfg(ascend={"pool": {"acceleratorsPerNode": 16}}),
    }
    changes = config_changes(base, head, load_settings(base), load_settings(head))
    assert [(c.fact, c.before, c.after, c.kind) for c in changes] == [
        ("ascend.pool.acceleratorsPerNode", "8", "16", "config"),
        (
            "verifiedAscendImage",
            "registry/inference-service:v1.2.3-npu",
            "registry/inference-service:v9-npu",
            "evidence",
        ),
        ("kubernetes:context", "(unset)", "other", "config"),
    ]


def resolved_changes(base, head):
    return describe(config_changes(base, head, load_settings(base), load_settings(head)))


def test_the_routing_keys_are_envelope_facts():
    """Issue 14's keys: the router, the tester pins, the bake time, and a raise of the
    mirrored share each need the owners."""
    base = cfg(ascendWeight="0")
    head = cfg(
        ascendWeight="0",
        router="gateway-api",
        testerPinning={"header": "x-team-pin"},
        bakeTime="1h",
        mirrorPercent="10",
    )
    assert resolved_changes(base, head) == [
        "bakeTime: 24h -> 1h",
        "mirrorPercent: 0 -> 10",
        "router: istio -> gateway-api",
        "testerPinning.header: x-dualstack-hardware -> x-team-pin",
    ]
    assert resolved_changes(base, cfg(ascendWeight="0", testerPinning={"enabled": False})) == [
        "testerPinning.enabled: true -> false"
    ]


def test_leaving_the_shadow_rung_is_a_step():
    """The promotion from the shadow rung writes mirrorPercent 0 with the new weight
    (`dualstack.step.weights`); lowering the mirror is part of the step, raising it is not."""
    shadow = cfg(ascendWeight="0", mirrorPercent="10")
    assert resolved_changes(shadow, cfg(ascendWeight="5", mirrorPercent="0")) == []
    assert resolved_changes(shadow, cfg(ascendWeight="5")) == []  # the key removed: default 0
    assert resolved_changes(shadow, cfg(ascendWeight="0", mirrorPercent="5")) == []
    assert resolved_changes(shadow, cfg(ascendWeight="0", mirrorPercent="20")) == [
        "mirrorPercent: 10 -> 20"
    ]
    assert describe(config_changes(shadow, cfg(ascendWeight="0", mirrorPercent="5"))) == []
    assert describe(config_changes(shadow, cfg(ascendWeight="5"))) == [
        "mirrorPercent: 10 -> (unset)"  # as written, an absent key is no number: fail closed
    ]


def test_a_new_stack_file_is_one_change(tmp_path):
    files = [EnvelopeChange("dualstack/cli.py", "at base", "modified", "file")]
    assert describe(envelope_changes(None, cfg(ascendWeight="0"), files, "canary")) == [
        "Pulumi.canary.yaml: absent -> added",
        "file dualstack/cli.py: at base -> modified",
    ]


def repo_with(tmp_path, files):
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def test_program_files_committed_staged_unstaged_and_untracked(tmp_path):
    repo, base = repo_with(
        tmp_path,
        {
            "Pulumi.yaml": "name: x\n",
            "README.md": "docs\n",
            "policies/traffic.py": "a = 1\n",
            "dualstack/cli.py": "b = 1\n",
            ".gitignore": "*.pyc\n",
        },
    )
    (repo / "policies" / "traffic.py").write_text("a = 100\n")
    git(repo, "commit", "-qam", "committed")
    (repo / "dualstack" / "cli.py").unlink()  # unstaged deletion
    (repo / "components").mkdir()
    (repo / "components" / "new.py").write_text("c = 1\n")  # untracked
    (repo / "components" / "new.pyc").write_text("ignored\n")
    (repo / "README.md").write_text("more docs\n")  # not the envelope
    assert describe(file_changes(repo, base)) == [
        "file components/new.py: absent -> added",
        "file dualstack/cli.py: present -> deleted",
        "file policies/traffic.py: at base -> modified",
    ]


def test_paths_are_the_project_s_when_it_lives_in_a_subfolder(tmp_path):
    repo, base = repo_with(tmp_path, {"infra/Pulumi.yaml": "name: x\n", "infra/__main__.py": "1\n"})
    (repo / "infra" / "__main__.py").write_text("2\n")
    assert describe(file_changes(repo / "infra", base)) == ["file __main__.py: at base -> modified"]


def test_numbers_compare_as_numbers_however_pulumi_hands_them_over():
    """4.0 (a JSON number through the engine) is the stored "4"; it shows as 4."""
    base = cfg(ascendWeight="5", capacity={"totalReplicas": 4.0})
    assert config_changes(base, cfg(ascendWeight="5", capacity={"totalReplicas": "4"})) == []
    head = cfg(ascendWeight="5", capacity={"totalReplicas": "2"})
    assert describe(config_changes(base, head)) == ["capacity.totalReplicas: 4 -> 2"]


def test_the_same_mirror_written_otherwise_is_no_fall():
    """As written, "10.0" after "10" is no lower share: it stays an envelope fact."""
    base = cfg(ascendWeight="0", mirrorPercent="10")
    head = cfg(ascendWeight="0", mirrorPercent="10.0")
    assert describe(config_changes(base, head)) == ["mirrorPercent: 10 -> 10.0"]


def test_an_edited_verified_pair_is_an_evidence_change():
    """One image of a recorded pair edited by the pull request itself (a list of mappings: a
    leaf compared whole)."""
    pair = {"nvidia": "registry/inference-service:v1.2.3-cuda", "ascend": "registry/x:v1-npu"}
    base = cfg(ascendWeight="5", verifiedImages=[pair])
    head = cfg(ascendWeight="5", verifiedImages=[{**pair, "nvidia": "registry/y:v9-cuda"}])
    [change] = config_changes(base, head)
    assert (change.fact, change.kind) == ("verifiedImages", "evidence")
    assert change.before == (
        '[{"ascend": "registry/x:v1-npu", "nvidia": "registry/inference-service:v1.2.3-cuda"}]'
    )
    assert change.after == '[{"ascend": "registry/x:v1-npu", "nvidia": "registry/y:v9-cuda"}]'
    same = cfg(ascendWeight="5", verifiedImages=[{**pair}])
    assert config_changes(base, same) == []


def test_an_existing_stack_lists_its_resolved_config_changes_then_the_files():
    """An explicit default (bakeTime 24h) is no change as resolved; the replica count is."""
    base = cfg(ascendWeight="5")
    head = cfg(ascendWeight="20", bakeTime="24h", capacity={"totalReplicas": 2})
    files = [EnvelopeChange("dualstack/cli.py", "at base", "modified", "file")]
    settings = (load_settings(base), load_settings(head))
    assert describe(envelope_changes(base, head, files, "prod", settings)) == [
        "capacity.totalReplicas: 4 -> 2",
        "file dualstack/cli.py: at base -> modified",
    ]


def test_the_policy_config_entries_carry_the_kind():
    """`envelopeChanges` entries as the pack reads them: fact, before, after and kind."""
    files = [EnvelopeChange("dualstack/cli.py", "at base", "modified", "file")]
    changes = envelope_changes(None, cfg(ascendWeight="0"), files, "canary")
    assert [change.as_fact() for change in changes] == [
        {"fact": "Pulumi.canary.yaml", "before": "absent", "after": "added", "kind": "stack"},
        {"fact": "dualstack/cli.py", "before": "at base", "after": "modified", "kind": "file"},
    ]


def test_a_renamed_program_file_is_a_deletion_and_an_addition(tmp_path):
    """git's rename detection is off: both paths are facts of their own."""
    repo, base = repo_with(tmp_path, {"Pulumi.yaml": "name: x\n", "policies/old.py": "a = 1\n"})
    git(repo, "mv", "policies/old.py", "policies/new.py")
    git(repo, "commit", "-qm", "renamed")
    assert describe(file_changes(repo, base)) == [
        "file policies/new.py: absent -> added",
        "file policies/old.py: present -> deleted",
    ]


def test_a_program_file_turned_into_a_symlink_is_changed(tmp_path):
    """A type change (git status T) is neither added, deleted nor modified: `changed`."""
    repo, base = repo_with(
        tmp_path, {"Pulumi.yaml": "name: x\n", "policies/traffic.py": "a = 1\n", "elsewhere.py": ""}
    )
    (repo / "policies" / "traffic.py").unlink()
    (repo / "policies" / "traffic.py").symlink_to("../elsewhere.py")
    assert describe(file_changes(repo, base)) == ["file policies/traffic.py: at base -> changed"]


def test_settings_for_one_side_only_compare_as_written():
    """Both sides are resolved or neither: one side's defaults against the other's written
    keys would list every default as a change."""
    base, head = cfg(ascendWeight="5"), cfg(ascendWeight="5", capacity={"totalReplicas": 4})
    for settings in ((load_settings(base), None), (None, load_settings(head))):
        assert describe(config_changes(base, head, *settings)) == [
            "capacity.totalReplicas: (unset) -> 4"
        ]


def test_an_unchanged_key_before_a_changed_one_hides_nothing():
    base = cfg(ascendWeight="5", bakeTime="1h", capacity={"totalReplicas": 4})
    head = cfg(ascendWeight="5", bakeTime="1h", capacity={"totalReplicas": 2})
    assert describe(config_changes(base, head)) == ["capacity.totalReplicas: 4 -> 2"]


def test_evidence_written_as_a_mapping_is_still_evidence():
    """As written, a malformed verifiedAscendImage (a mapping) keeps its evidence kind."""
    base = cfg(ascendWeight="5")
    head = cfg(ascendWeight="5", verifiedAscendImage={"image": "registry/x:v1-npu"})
    [change] = config_changes(base, head)
    assert (change.fact, change.kind) == ("verifiedAscendImage.image", "evidence")


def test_a_list_handed_over_as_json_text_is_the_same_list():
    """Pulumi hands structured values over as JSON text: `[0, 5, ...]` is the written list."""
    ladder = [0, 5, 20, 50, 80, 100]
    base = cfg(ascendWeight="5", ladder=ladder)
    assert config_changes(base, cfg(ascendWeight="5", ladder=json.dumps(ladder))) == []
    assert describe(config_changes(base, cfg(ascendWeight="5", ladder="[0, 5, 50, 100]"))) == [
        "ladder: [0, 5, 20, 50, 80, 100] -> [0, 5, 50, 100]"
    ]


def test_a_lowered_mirror_hides_no_later_change():
    """Leaving the shadow rung and switching routers in one pull request: the switch (sorted
    after mirrorPercent) is still a fact."""
    shadow = cfg(ascendWeight="0", mirrorPercent="10")
    head = cfg(ascendWeight="5", mirrorPercent="0", router="gateway-api")
    assert resolved_changes(shadow, head) == ["router: istio -> gateway-api"]


FLEET_TEXT = """config:
  dualstack-inference:services:
    chat:
      ascendWeight: 50
    embedder:
      ascendWeight: 20
"""


def test_another_fleet_stack_that_only_lowers_its_members_is_no_change(tmp_path):
    """`dualstack rollback --all` lowers every service of every stack in one commit: a fleet
    file whose only edits are lower member weights is a rollback, not an envelope change."""
    repo, base = repo_with(
        tmp_path, {"Pulumi.yaml": "name: x\n", "Pulumi.prod.yaml": "config: {}\n"}
    )
    (repo / "Pulumi.fleet.yaml").write_text(FLEET_TEXT)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "fleet")
    base = git(repo, "rev-parse", "HEAD").strip()
    fleet = repo / "Pulumi.fleet.yaml"
    fleet.write_text(FLEET_TEXT.replace("50", "0").replace("20", "5"))
    assert describe(other_stack_changes(repo, base, "prod")) == []
    fleet.write_text(FLEET_TEXT.replace("50", "0").replace("20", "50"))  # one raised
    assert describe(other_stack_changes(repo, base, "prod")) == [
        "file Pulumi.fleet.yaml: at base -> modified"
    ]
    fleet.write_text(FLEET_TEXT.replace("50", "0") + "    reranker:\n      ascendWeight: 0\n")
    assert describe(other_stack_changes(repo, base, "prod")) == [  # a member added
        "file Pulumi.fleet.yaml: at base -> modified"
    ]
    fleet.write_text(FLEET_TEXT)  # unchanged
    assert describe(other_stack_changes(repo, base, "prod")) == []


def test_a_fleet_members_mirror_is_its_own_and_lowering_it_is_a_step():
    from components.settings import load_fleet

    def member(weight: int, mirror: int) -> dict:
        return {"ascendWeight": weight, "mirrorPercent": mirror}

    def fleet(chat: dict) -> dict:
        return cfg(services={"chat": chat, "embedder": member(20, 0)})

    def changes(base, head):
        return describe(config_changes(base, head, load_fleet(base), load_fleet(head)))

    shadow = fleet(member(0, 10))
    assert changes(shadow, fleet(member(5, 0))) == []
    assert changes(shadow, fleet(member(0, 20))) == ["services.chat.mirrorPercent: 10 -> 20"]
