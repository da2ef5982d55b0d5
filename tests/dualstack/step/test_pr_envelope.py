"""The PR text lists the safety-envelope changes fact by fact (docs/trust-model.md)."""

from __future__ import annotations

from dualstack.repo.stackfile import set_config_values
from tests.support.judge_repos import make_repo
from tests.support.migration_helpers import (
    SKIP,
    _identity,  # noqa: F401 (autouse: identity, no CLI)
    dualstack,
)


def test_a_plain_promotion_says_the_envelope_is_unchanged(tmp_path, capsys):
    repo = make_repo(tmp_path)
    assert dualstack(repo, "promote", "--stack", "prod", *SKIP) == 0
    body = capsys.readouterr().out
    assert "### Safety envelope\n\nUnchanged: this is a migration step only.\n" in body


def test_a_rollback_lists_each_envelope_change(tmp_path, capsys):
    repo = make_repo(tmp_path)
    set_config_values(repo, "prod", {"capacity": {"totalReplicas": 6}})
    assert dualstack(repo, "rollback", "--stack", "prod") == 0  # a decrease is never blocked
    body = capsys.readouterr().out
    assert "### Safety envelope\n" in body
    assert "- `capacity.totalReplicas: 4 -> 6`\n" in body
