"""Leaving the shadow rung: the step that raises the weight above 0 also ends the mirror."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.settings import PROJECT, load_settings
from dualstack.repo.stackfile import StackFileError, read_config
from dualstack.step.pr_text import summary_table
from dualstack.step.weights import change_weight
from tests.support.pulumi_stub import hide_pulumi

STACK_FILE = f"""\
# the shadow rung: Ascend sees 10% of production as copies
config:
  {PROJECT}:ascendWeight: "0"
  # copies only, responses discarded
  {PROJECT}:mirrorPercent: "10"
  {PROJECT}:verifiedAscendImage: registry/inference-service:v1.2.3-npu
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch) -> Path:
    hide_pulumi(monkeypatch)
    (tmp_path / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    (tmp_path / "Pulumi.prod.yaml").write_text(STACK_FILE)
    return tmp_path


def test_raising_from_the_shadow_rung_writes_mirror_0_and_keeps_the_rest(root):
    before = load_settings(read_config(root, "prod"))
    change = change_weight(root, "prod", before, 5)
    assert (change.after.ascend_weight, change.after.mirror_percent) == (5, 0)
    text = (root / "Pulumi.prod.yaml").read_text()
    assert text == STACK_FILE.replace('ascendWeight: "0"', 'ascendWeight: "5"').replace(
        'mirrorPercent: "10"', 'mirrorPercent: "0"'
    )
    assert "| Mirrored to Ascend | 10% | 0% |" in summary_table(change)


def test_a_move_that_stays_at_0_keeps_the_mirror(root):
    before = load_settings(read_config(root, "prod"))
    change = change_weight(root, "prod", before, 0)
    assert change.after.mirror_percent == 10


def test_a_failed_read_back_restores_both_lines(root, monkeypatch):
    import dualstack.step.weights as weights

    before = load_settings(read_config(root, "prod"))
    monkeypatch.setattr(weights, "read_config", lambda *_: {f"{PROJECT}:ascendWeight": "x"})
    with pytest.raises(StackFileError, match="restored its previous content"):
        change_weight(root, "prod", before, 5)
    assert (root / "Pulumi.prod.yaml").read_text() == STACK_FILE


def test_promote_from_the_shadow_rung_is_one_commit_of_two_lines(root, capsys):
    """`dualstack promote --commit` at 0% + 10% mirrored: the step to 5% ends the mirror, the
    base's judge passes it (previous weight 0; lowering the mirror is part of the step, no
    envelope change), the commit holds both lines."""
    from dualstack.cli import main
    from tests.conftest import copy_code, git

    copy_code(root)  # the base's judge runs the base's code
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n", encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "shadow rung")
    reason = ["--skip-gate", "--reason", "mirrored 10% for two days without errors"]
    assert main(["-C", str(root), "promote", "--stack", "prod", "--commit", *reason]) == 0
    diff = git(root, "show", "--format=", "--unified=0", "HEAD")
    changed = [
        line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert changed == [
        f'-  {PROJECT}:ascendWeight: "0"',
        f'+  {PROJECT}:ascendWeight: "5"',
        f'-  {PROJECT}:mirrorPercent: "10"',
        f'+  {PROJECT}:mirrorPercent: "0"',
    ]
    out = capsys.readouterr().out
    assert "| Mirrored to Ascend | 10% | 0% |" in out
    assert "Unchanged: this is a migration step only." in out


FLEET_FILE = f"""\
config:
  {PROJECT}:services:
    chat:
      ascendWeight: 0
      mirrorPercent: 10  # chat's shadow rung
    embedder:
      ascendWeight: 20
"""


def test_a_fleet_member_leaving_its_shadow_rung_ends_its_own_mirror(root):
    from components.settings import load_fleet

    (root / "Pulumi.fleet.yaml").write_text(FLEET_FILE)
    chat = load_fleet(read_config(root, "fleet")).member("chat")
    change = change_weight(root, "fleet", chat, 5)
    assert (change.after.name, change.after.ascend_weight, change.after.mirror_percent) == (
        "chat",
        5,
        0,
    )
    assert (root / "Pulumi.fleet.yaml").read_text() == FLEET_FILE.replace(  # comment column kept
        "ascendWeight: 0\n      mirrorPercent: 10  #", "ascendWeight: 5\n      mirrorPercent: 0   #"
    )
