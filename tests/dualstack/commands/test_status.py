"""`dualstack status` over the real stack files, with and without a reachable backend."""

from __future__ import annotations

import json

from dualstack.cli import main
from dualstack.repo.stackfile import set_config_values
from tests.conftest import git
from tests.support.pulumi_stub import hide_pulumi, install_fake_pulumi
from tests.support.watching import watched


def test_status_of_every_stack(git_repo, capsys, monkeypatch):
    hide_pulumi(monkeypatch)
    assert main(["-C", str(git_repo), "status"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:6] == [
        "prod",
        "  weight        5% Ascend, 95% NVIDIA",
        "  ladder        0 [5] 20 50 80 100 (step 1/5)",
        "  next step     20% (dualstack promote --stack prod)",
        "  Ascend image  registry/inference-service:v1.2.3-npu (precision-verified)",
        "  deployed      unknown: the pulumi CLI is not installed, so no backend was asked",
    ]
    assert "staging\n  weight        20% Ascend, 80% NVIDIA" in out


def test_status_flags_unverified_image_and_top_of_ladder(git_repo, capsys):
    set_config_values(git_repo, "prod", {"ascendWeight": 100})
    set_config_values(
        git_repo, "prod", {"ascend": {"image": "registry/inference-service:v1.3.0-npu"}}
    )
    git(git_repo, "commit", "-qam", "prod at 100 with a new image")
    assert main(["-C", str(git_repo), "status", "--stack", "prod"]) == 0
    out = capsys.readouterr().out
    assert "next step     none: the migration is complete" in out
    assert (
        "registry/inference-service:v1.3.0-npu (NOT verified; verified image: "
        "registry/inference-service:v1.2.3-npu)"
    ) in out


def test_status_reports_drift_from_the_backend(git_repo, tmp_path, monkeypatch, capsys):
    install_fake_pulumi(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_PULUMI_DEPLOYED", "5")
    assert main(["-C", str(git_repo), "status", "--json"]) == 3  # staging drifted
    result = {s["stack"]: s for s in json.loads(capsys.readouterr().out)["stacks"]}
    assert result["prod"]["deployed"] == "in sync (5%)"
    assert result["staging"]["deployed"] == "DIFFERS: deployed 5%, git 20%"
    assert result["staging"]["deployedWeight"] == 5


def test_status_reports_an_unreachable_backend(git_repo, tmp_path, monkeypatch, capsys):
    install_fake_pulumi(tmp_path, monkeypatch)
    assert main(["-C", str(git_repo), "status", "--stack", "prod"]) == 0
    out = capsys.readouterr().out
    assert (
        "deployed      unknown: `pulumi stack output ascendWeight --stack prod` failed: "
        "error: no Pulumi.yaml"
    ) in out


def test_invalid_stack_is_reported_and_the_others_still_shown(git_repo, capsys):
    set_config_values(git_repo, "staging", {"ascendWeight": "abc"})
    assert main(["-C", str(git_repo), "status"]) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith("prod\n")
    assert captured.err == (
        "error: stack staging: dualstack-inference:ascendWeight = 'abc': "
        "expected a whole number in decimal digits (e.g. 20), without sign '+', leading zeros, "
        "spaces, '_', fraction or exponent\n"
    )


def test_a_step_written_but_not_landed_is_not_a_next_step(git_repo, capsys, monkeypatch):
    hide_pulumi(monkeypatch)
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    assert main(["-C", str(git_repo), "status", "--stack", "prod"]) == 3
    line = next(x for x in capsys.readouterr().out.splitlines() if "next step" in x)
    assert line.startswith(
        "  next step     50% after the pending step: 20% in the working tree (not committed), "
        "5% at HEAD ("
    )
    assert line.endswith("commit, merge and deploy that step, or revert it")
    assert "promote" not in line


def test_a_committed_and_pushed_step_reads_the_same_in_text_and_json(
    git_repo, tmp_path, capsys, monkeypatch
):
    """The step on its own branch, pushed: status says merge it (not commit it), and its text
    names the same next step as the JSON's nextStep."""
    hide_pulumi(monkeypatch)
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(git_repo, "remote", "add", "origin", str(origin))
    git(git_repo, "push", "-q", "origin", "main")
    git(git_repo, "fetch", "-q", "origin")
    base = git(git_repo, "rev-parse", "--short", "HEAD").strip()
    git(git_repo, "switch", "-q", "-c", "prod-ascend-20")
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    git(git_repo, "commit", "-qam", "prod: Ascend 5 -> 20")
    git(git_repo, "push", "-q", "-u", "origin", "prod-ascend-20")
    assert main(["-C", str(git_repo), "status", "--stack", "prod"]) == 3
    line = next(x for x in capsys.readouterr().out.splitlines() if "next step" in x)
    assert line == (
        "  next step     50% after the pending step: 20% committed on prod-ascend-20, 5% at "
        f"the merge base with the default branch ({base}): merge and deploy that step, or "
        "revert it"
    )
    assert main(["-C", str(git_repo), "status", "--stack", "prod", "-o", "json"]) == 3
    (prod,) = json.loads(capsys.readouterr().out)["stacks"]
    assert prod["nextStep"] == 50
    assert prod["pending"] == line.split("after the pending step: ", 1)[1]


def test_a_merged_but_undeployed_step_is_not_a_next_step(git_repo, tmp_path, monkeypatch, capsys):
    install_fake_pulumi(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_PULUMI_DEPLOYED", "0")
    assert main(["-C", str(git_repo), "status", "--stack", "prod", "--json"]) == 3
    (prod,) = json.loads(capsys.readouterr().out)["stacks"]
    assert prod["pending"] == "deployed 0%, git 5%: deploy the merged step, or revert it"
    assert prod["nextStep"] == 20  # the ladder's next rung, once the pending step is settled


def test_status_watch_redraws_in_place_on_a_terminal(git_repo, monkeypatch):
    """`status --watch` on a terminal: each drawing clears the screen and draws the status
    under its header; Ctrl-C ends it with the last drawing's exit code and no error line."""
    hide_pulumi(monkeypatch)
    argv = ["status", "-s", "prod", "--watch", "--interval", "1"]
    code, out = watched(argv, git_repo, drawings=2, terminal=True)
    assert code == 0  # in sync, as the last drawing said
    drawings = out.split("\x1b[H\x1b[2J")[1:]
    assert len(drawings) >= 2
    for drawing in drawings:
        assert drawing.startswith("Every 1 s: dualstack status (Ctrl-C stops)  ")
        assert "\n\nprod\n  weight        5% Ascend, 95% NVIDIA\n" in drawing
    assert "error" not in out and "Traceback" not in out


def test_status_watch_into_a_pipe_keeps_every_drawing(git_repo, monkeypatch):
    hide_pulumi(monkeypatch)
    set_config_values(git_repo, "prod", {"ascendWeight": 20})  # a pending step: exit 3
    argv = ["status", "-s", "prod", "--watch", "--interval", "1"]
    code, out = watched(argv, git_repo, drawings=2, terminal=False)
    assert code == 3
    assert "\x1b[" not in out  # no screen control into a log
    assert out.count("Every 1 s: dualstack status (Ctrl-C stops)") >= 2
    assert out.count("  next step     50% after the pending step: ") >= 2


def test_status_watch_is_for_a_person(git_repo, capsys):
    for extra, message in (
        (["-o", "json"], "error: --watch redraws the text for a person: leave out -o json"),
        (["--at", "1700000000"], "error: --watch follows the present: leave out --at\n"),
    ):
        assert main(["-C", str(git_repo), "status", "--watch", *extra]) == 2
        assert capsys.readouterr().err.startswith(message)
