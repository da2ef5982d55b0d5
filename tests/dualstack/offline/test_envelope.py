"""The safety envelope's facts: config changes (as written and as resolved) and program files
changed in a real git repository."""

from __future__ import annotations

import json

import pytest

from components.settings import load_fleet
from dualstack.offline.envelope import (
    EnvelopeChange,
    config_changes,
    envelope_changes,
    file_changes,
    flatten,
    other_stack_changes,
    stack_settings_changes,
)
from dualstack.repo.stackfile import StackFileError
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
    assert config_changes(base, head, load_fleet(base), load_fleet(head)) == []


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
    resolved = config_changes(base, head, load_fleet(base), load_fleet(head))
    assert resolved == []  # an explicit default changes nothing


def test_every_other_key_is_a_fact_with_its_kind():
    base = cfg(ascendWeight="5", verifiedAscendImage="registry/inference-service:v1.2.3-npu")
    head = {
        **cfg(ascendWeight="5", verifiedAscendImage="registry/inference-service:v9-npu"),
        "kubernetes:context": "other",
        **cfg(ascend={"pool": {"acceleratorsPerNode": 16}}),
    }
    changes = config_changes(base, head, load_fleet(base), load_fleet(head))
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
    return describe(config_changes(base, head, load_fleet(base), load_fleet(head)))


def test_the_routing_keys_are_envelope_facts():
    """Issue 14's keys: the router, the tester pins, the bake time, and a raise of the
    mirrored share each need the owners."""
    base = cfg(ascendWeight="0")
    head = cfg(
        ascendWeight="0",
        router="gateway-api",
        testerPinning={"header": "x-dualstack-team"},
        bakeTime="1h",
        mirrorPercent="10",
    )
    assert resolved_changes(base, head) == [
        "bakeTime: 24h -> 1h",
        "mirrorPercent: 0 -> 10",
        "router: istio -> gateway-api",
        "testerPinning.header: x-dualstack-hardware -> x-dualstack-team",
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
    settings = (load_fleet(base), load_fleet(head))
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
    assert describe(file_changes(repo, base)) == [
        "file policies/traffic.py: at base -> changed (a symlink)"
    ]


def test_any_symlink_is_a_program_file_whatever_its_name(tmp_path):
    """Issue 28: a symlink makes one name read another file's bytes (a stack file into
    `docs/`, a doc into the program), so under `docs/`, `tests/` or named as a stack file it is
    the program: committed, untracked, or turned back into a regular file."""
    repo, base = repo_with(
        tmp_path,
        {"Pulumi.yaml": "name: x\n", "docs/prod.yaml": "config: {}\n", "tests/t.py": "1\n"},
    )
    (repo / "Pulumi.canary.yaml").symlink_to("docs/prod.yaml")
    git(repo, "add", "Pulumi.canary.yaml")
    (repo / "docs" / "guide.md").symlink_to("../Pulumi.yaml")  # untracked
    (repo / "tests" / "t.py").unlink()
    (repo / "tests" / "t.py").symlink_to("../Pulumi.yaml")
    assert describe(file_changes(repo, base)) == [
        "file Pulumi.canary.yaml: absent -> added (a symlink)",
        "file docs/guide.md: absent -> added (a symlink)",
        "file tests/t.py: at base -> changed (a symlink)",
    ]
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "links")
    linked = git(repo, "rev-parse", "HEAD").strip()
    (repo / "tests" / "t.py").unlink()
    (repo / "tests" / "t.py").write_text("1\n")  # a regular file again: was a symlink
    assert describe(file_changes(repo, linked)) == [
        "file tests/t.py: at base -> changed (a symlink)"
    ]


@pytest.mark.parametrize(
    "name", ["Pulumi.prod.yml", "pulumi.prod.yaml", "Pulumi.prod.YAML", "PULUMI.prod.yaml"]
)
def test_a_stack_file_name_the_judge_does_not_read_is_a_program_file(tmp_path, name):
    """Issue 28: `Pulumi.prod.yml` beside `Pulumi.prod.yaml` (Pulumi may read either; a
    case-insensitive file system folds the others) was counted as prod, then skipped."""
    repo, base = repo_with(tmp_path, {"Pulumi.yaml": "name: x\n", "Pulumi.prod.yaml": "{}\n"})
    (repo / name).write_text('config:\n  dualstack-inference:ascendWeight: "100"\n')
    assert describe(file_changes(repo, base)) == [f"file {name}: absent -> added"]


def test_a_case_variant_of_the_judged_stack_is_another_stack_s_change(tmp_path):
    """`Pulumi.Prod.yaml` only lowering its weight is no rollback of another stack: on a
    case-insensitive file system it is the judged stack's own file."""
    repo, base = two_stacks(tmp_path, **{"Pulumi.Prod.yaml": STAGING})
    (repo / "Pulumi.Prod.yaml").write_text(STAGING.replace('"20"', '"5"'))
    assert describe(other_stack_changes(repo, base, "prod")) == [
        "file Pulumi.Prod.yaml: at base -> modified"
    ]


def test_settings_for_one_side_only_compare_as_written():
    """Both sides are resolved or neither: one side's defaults against the other's written
    keys would list every default as a change."""
    base, head = cfg(ascendWeight="5"), cfg(ascendWeight="5", capacity={"totalReplicas": 4})
    for settings in ((load_fleet(base), None), (None, load_fleet(head))):
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


def fleet_changes(base, head):
    from components.settings import load_fleet

    return describe(config_changes(base, head, load_fleet(base), load_fleet(head)))


def test_a_stack_without_services_read_as_a_fleet_keeps_its_keys():
    """The judge reads every stack as a fleet: one without `services` is its single service,
    its facts under the stack file's own keys (`capacity.totalReplicas`, not
    `services.<name>...` nor the settings' field names)."""
    base = cfg(ascendWeight="5")
    assert fleet_changes(base, cfg(ascendWeight="20")) == []  # a step
    assert fleet_changes(base, cfg(ascendWeight="5", capacity={"totalReplicas": 2})) == [
        "capacity.totalReplicas: 4 -> 2"
    ]


def fleet_of(**stack) -> dict:
    members = {
        "chat": {"ascendWeight": 50, "nvidia": {"image": "registry/chat:v1-cuda"}},
        "embedder": {"ascendWeight": 20},
    }
    for name, own in stack.pop("members", {}).items():
        members[name] = {**members[name], **own}
    return cfg(services=members, **stack)


def test_a_fleet_s_shared_pool_is_one_fact_of_the_stack():
    """The pools are the stack's: a change of them is listed once, at the stack level."""
    head = fleet_of(ascend={"pool": {"acceleratorsPerNode": 16}})
    assert fleet_changes(fleet_of(), head) == ["ascend.pool.acceleratorsPerNode: 8 -> 16"]


def test_a_fleet_s_ladder_is_one_fact_of_the_stack():
    head = fleet_of(ladder=[0, 5, 20, 50, 100])
    assert fleet_changes(fleet_of(), head) == [
        "ladder: [0, 5, 20, 50, 80, 100] -> [0, 5, 20, 50, 100]"
    ]


def test_a_fleet_member_s_own_backend_keys_are_its_facts():
    """A member's backend settings (its resources, not its images: a step) are facts under
    `services.<name>.<hardware>`; the shared pool does not reappear there."""
    head = fleet_of(members={"chat": {"nvidia": {"resources": {"cpuLimit": "16"}}}})
    changed = fleet_changes(fleet_of(), head)
    assert changed == ["services.chat.nvidia.resources.cpuLimit: 8 -> 16"]
    step = fleet_of(members={"chat": {"ascendWeight": 80, "nvidia": {"image": "r/chat:v2-cuda"}}})
    assert fleet_changes(fleet_of(), step) == []


NAMED = [
    ("ascend.deploymentName", "inference-green", "{}-green"),
    ("gatewayApi.routeName", "inference-route", "{}-route"),
    ("istio.destinationRuleName", "inference-dr", "{}-dr"),
    ("istio.virtualServiceName", "inference-vs", "{}-vs"),
    ("nvidia.deploymentName", "inference-blue", "{}-blue"),
]
"""(key, the single service's object name, the name a member takes from its name)."""


@pytest.mark.parametrize("name", ["inference-service", "chat"])
def test_a_fleet_of_one_conversion_lists_the_layout_and_what_it_renames(name):
    """A stack without `services` becoming a fleet of one (or back) is compared in the head's
    layout: the base's one service under the head's name. The layout is one fact; the
    service's keys differ only where they really do (its object names, its Service's name)."""
    single = cfg(ascendWeight="5", capacity={"totalReplicas": 6})
    fleet = cfg(services={name: {"ascendWeight": 5, "capacity": {"totalReplicas": 6}}})
    names = [(key, old, new.format(name)) for key, old, new in NAMED]
    if name != "inference-service":
        names.append(("service.name", "inference-service", name))
    assert fleet_changes(single, fleet) == [
        f'services: (unset) -> ["{name}"]',
        *(f"services.{name}.{key}: {old} -> {new}" for key, old, new in names),
    ]
    assert fleet_changes(fleet, single) == [
        *(f"{key}: {new} -> {old}" for key, old, new in names),
        f'services: ["{name}"] -> (unset)',
    ]


def test_a_fleet_of_one_conversion_still_lists_a_changed_key():
    single = cfg(ascendWeight="5")
    fleet = cfg(services={"chat": {"ascendWeight": 5, "capacity": {"totalReplicas": 2}}})
    assert "services.chat.capacity.totalReplicas: 4 -> 2" in fleet_changes(single, fleet)
    assert "capacity.totalReplicas: 2 -> 4" in fleet_changes(fleet, single)


def test_a_stack_becoming_a_fleet_of_two_lists_the_layout_and_every_member_key():
    single = cfg(ascendWeight="5")
    fleet = cfg(services={"chat": {"ascendWeight": 5}, "embedder": {"ascendWeight": 0}})
    changes = fleet_changes(single, fleet)
    assert 'services: (unset) -> ["chat", "embedder"]' in changes
    assert "services.chat.capacity.totalReplicas: (unset) -> 4" in changes
    assert "capacity.totalReplicas: 4 -> (unset)" in changes
    assert fleet_changes(fleet, fleet) == []


STAGING = """config:
  dualstack-inference:ascendWeight: "20"
  dualstack-inference:verifiedAscendImage: registry/inference-service:v1.2.3-npu
"""


def two_stacks(tmp_path, staging=STAGING, **more):
    """A repo whose base holds prod, staging (at 20) and `more` files; judged stack: prod."""
    files = {"Pulumi.yaml": "name: x\n", "Pulumi.prod.yaml": "config: {}\n"}
    return repo_with(tmp_path, {**files, "Pulumi.staging.yaml": staging, **more})


def test_another_stack_that_only_lowers_its_weight_is_no_change(tmp_path):
    """`dualstack rollback --all` lowers staging with prod: no envelope change of prod."""
    repo, base = two_stacks(tmp_path)
    (repo / "Pulumi.staging.yaml").write_text(STAGING.replace('"20"', '"5"'))
    assert describe(other_stack_changes(repo, base, "prod")) == []


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda text: text.replace('"20"', '"5"') + "  x:y: z\n", id="another key"),
        pytest.param(lambda text: "environment: [team/prod]\n" + text, id="outside config"),
        pytest.param(lambda text: text + "# reviewed\n", id="a comment only"),
        pytest.param(lambda text: text.replace('"20"', '"50"'), id="raised"),
    ],
)
def test_another_stack_file_changed_otherwise_is_a_change(tmp_path, edit):
    """Lowered with any other edit (a key, an ESC environment), edited without a lower weight
    (a comment, a raise): the other stack's file is an envelope fact."""
    repo, base = two_stacks(tmp_path)
    (repo / "Pulumi.staging.yaml").write_text(edit(STAGING))
    assert describe(other_stack_changes(repo, base, "prod")) == [
        "file Pulumi.staging.yaml: at base -> modified"
    ]


def test_the_judged_stack_s_own_file_and_program_files_are_not_other_stacks(tmp_path):
    """Its own file is read fact by fact (`config_changes`), program files by `file_changes`;
    a raised other stack sorted after them is still found."""
    repo, base = two_stacks(tmp_path, **{"README.md": "docs\n", "dualstack/cli.py": "a = 1\n"})
    (repo / "Pulumi.prod.yaml").write_text('config:\n  dualstack-inference:ascendWeight: "5"\n')
    (repo / "README.md").write_text("more docs\n")
    (repo / "dualstack" / "cli.py").write_text("a = 2\n")
    assert describe(other_stack_changes(repo, base, "prod")) == []
    (repo / "Pulumi.staging.yaml").write_text(STAGING.replace('"20"', '"50"'))
    assert describe(other_stack_changes(repo, base, "prod")) == [
        "file Pulumi.staging.yaml: at base -> modified"
    ]


def test_a_lowered_stack_hides_no_later_raised_one(tmp_path):
    """canary lowered (a rollback) sorts before staging raised: staging is still a fact."""
    repo, base = two_stacks(tmp_path, **{"Pulumi.canary.yaml": STAGING})
    (repo / "Pulumi.canary.yaml").write_text(STAGING.replace('"20"', '"5"'))
    (repo / "Pulumi.staging.yaml").write_text(STAGING.replace('"20"', '"50"'))
    assert describe(other_stack_changes(repo, base, "prod")) == [
        "file Pulumi.staging.yaml: at base -> modified"
    ]


def test_another_stack_file_turned_into_a_symlink_is_changed(tmp_path):
    repo, base = two_stacks(tmp_path, **{"elsewhere.yaml": STAGING})
    (repo / "Pulumi.staging.yaml").unlink()
    (repo / "Pulumi.staging.yaml").symlink_to("elsewhere.yaml")
    # A symlink is a program file (issue 28): listed once, by file_changes.
    assert describe(other_stack_changes(repo, base, "prod")) == []
    assert describe(file_changes(repo, base)) == [
        "file Pulumi.staging.yaml: at base -> changed (a symlink)"
    ]


def test_an_empty_other_stack_file_given_config_is_a_change(tmp_path):
    """An empty file reads as no config at all; writing one into it lowers no weight."""
    repo, base = two_stacks(tmp_path, staging="")
    (repo / "Pulumi.staging.yaml").write_text("config: {}\n")
    assert describe(other_stack_changes(repo, base, "prod")) == [
        "file Pulumi.staging.yaml: at base -> modified"
    ]


def test_a_fleet_stack_lowering_one_member_and_keeping_another_is_no_change(tmp_path):
    repo, base = two_stacks(tmp_path, staging=FLEET_TEXT)
    (repo / "Pulumi.staging.yaml").write_text(FLEET_TEXT.replace("50", "0"))  # embedder kept
    assert describe(other_stack_changes(repo, base, "prod")) == []


BOMB = (
    "config:\n  x:a: &a ["
    + ", ".join(["1"] * 50)
    + "]\n"
    + "".join(
        f"  x:{name}: &{name} [" + ", ".join([f"*{prev}"] * 50) + "]\n"
        for prev, name in (("a", "b"), ("b", "c"))
    )
)
"""A small file whose config expands to 50**3 values, beyond the reader's bound."""


@pytest.mark.parametrize("side", ["base", "head"])
@pytest.mark.parametrize(
    ("unreadable", "problem"),
    [(BOMB, "expands to more than"), ("environment: [unclosed\n", "not valid YAML")],
    ids=["config too large", "not YAML"],
)
def test_an_unreadable_other_stack_file_is_named_in_the_error(tmp_path, side, unreadable, problem):
    repo, base = two_stacks(tmp_path, staging=unreadable if side == "base" else STAGING)
    (repo / "Pulumi.staging.yaml").write_text(STAGING if side == "base" else unreadable)
    with pytest.raises(StackFileError) as raised:
        other_stack_changes(repo, base, "prod")
    assert str(raised.value).startswith(f"Pulumi.staging.yaml: {problem}")


def test_the_keys_outside_config_are_stack_facts(tmp_path):
    """An ESC environment added, the secrets provider changed, the salt removed: each is a
    fact `Pulumi.prod.yaml <key>` of kind stack; an unchanged key is none."""
    before = "secretsprovider: passphrase\nencryptionsalt: v1:abc\nencryptedkey: k\nconfig: {}\n"
    after = "environment:\n  - team/prod\nsecretsprovider: awskms://alias/x\nencryptedkey: k\n"
    repo, base = repo_with(tmp_path, {"Pulumi.yaml": "name: x\n", "Pulumi.prod.yaml": before})
    (repo / "Pulumi.prod.yaml").write_text(after + "config: {}\n")
    changes = stack_settings_changes(repo, base, "prod")
    assert [(c.fact, c.before, c.after, c.kind) for c in changes] == [
        ("Pulumi.prod.yaml encryptionsalt", "v1:abc", "(unset)", "stack"),
        ("Pulumi.prod.yaml environment", "(unset)", '["team/prod"]', "stack"),
        ("Pulumi.prod.yaml secretsprovider", "passphrase", "awskms://alias/x", "stack"),
    ]
    assert describe(changes)[1] == 'Pulumi.prod.yaml environment: (unset) -> ["team/prod"]'


def test_keys_outside_config_compare_as_pulumi_stores_them(tmp_path):
    """An unchanged file, or one whose only edit is 4 written as "4", changes no key."""
    before = "x-team: 4\nconfig: {}\n"
    repo, base = repo_with(tmp_path, {"Pulumi.yaml": "name: x\n", "Pulumi.prod.yaml": before})
    assert stack_settings_changes(repo, base, "prod") == []
    (repo / "Pulumi.prod.yaml").write_text('x-team: "4"\nconfig: {}\n')
    assert stack_settings_changes(repo, base, "prod") == []


def test_a_stack_file_new_at_the_base_has_no_outside_config_facts(tmp_path):
    """The whole new file is the change (`envelope_changes`), not its keys one by one."""
    repo, base = repo_with(tmp_path, {"Pulumi.yaml": "name: x\n"})
    (repo / "Pulumi.prod.yaml").write_text("environment: [team/prod]\nconfig: {}\n")
    assert stack_settings_changes(repo, base, "prod") == []


def test_the_keys_outside_config_of_a_project_in_a_subfolder(tmp_path):
    files = {"infra/Pulumi.yaml": "name: x\n", "infra/Pulumi.prod.yaml": "config: {}\n"}
    repo, base = repo_with(tmp_path, files)
    (repo / "infra" / "Pulumi.prod.yaml").write_text("secretsprovider: gcpkms://k\nconfig: {}\n")
    assert describe(stack_settings_changes(repo / "infra", base, "prod")) == [
        "Pulumi.prod.yaml secretsprovider: (unset) -> gcpkms://k"
    ]


@pytest.mark.parametrize("side", ["base", "head"])
def test_an_unreadable_stack_file_is_named_with_its_side(tmp_path, side):
    """The base's copy is named by its commit (`<12 hex>:Pulumi.prod.yaml`), the head's by
    its file name."""
    broken = "environment: [unclosed\n"
    good = "config: {}\n"
    at_base = broken if side == "base" else good
    repo, base = repo_with(tmp_path, {"Pulumi.yaml": "name: x\n", "Pulumi.prod.yaml": at_base})
    (repo / "Pulumi.prod.yaml").write_text(good if side == "base" else broken)
    origin = f"{base[:12]}:Pulumi.prod.yaml" if side == "base" else "Pulumi.prod.yaml"
    with pytest.raises(StackFileError) as raised:
        stack_settings_changes(repo, base, "prod")
    assert str(raised.value).startswith(f"{origin}: not valid YAML")
