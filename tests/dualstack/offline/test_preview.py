"""`dualstack preview --base` against a real temporary git repository."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dualstack.cli import main
from dualstack.errors import UsageError
from dualstack.offline.preview import build_preview, format_preview
from dualstack.repo.baseref import default_base
from dualstack.repo.stackfile import StackFileError, set_config_values
from tests.conftest import EXAMPLE_FLEET, REPO, git
from tests.dualstack.commands.test_cli import dualstack


def test_weight_step_changes_the_route_and_the_recorded_weight(git_repo: Path) -> None:
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    preview = build_preview(git_repo, "prod", "main")
    assert preview.previous_weight == 5
    changed = [c.describe() for c in preview.changes if c.change != "same"]
    assert changed == [
        "~ PrometheusRule inference/inference-service-dualstack",
        "~ VirtualService inference/inference-vs",
    ]
    weight_rule = "record: namespace:inference_ascend_weight:ratio\n"
    assert f"{weight_rule}-      expr: vector(0.05)\n+      expr: vector(0.2)\n" in preview.diff
    assert "-      weight: 95\n+      weight: 80\n" in preview.diff
    assert "-      weight: 5\n+      weight: 20\n" in preview.diff
    report = format_preview(preview)
    assert "Ascend weight: 5% -> 20% (ladder step 2 of 5, next 50%)" in report
    assert "(2 changed, 0 added, 0 removed)" in report


def test_step_to_50_scales_ascend(git_repo: Path) -> None:
    set_config_values(git_repo, "prod", {"ascendWeight": 50})
    preview = build_preview(git_repo, "prod", "main")
    assert "Replicas: nvidia 4, ascend 2 -> 3" in format_preview(preview)
    assert "~ Deployment inference/inference-green" in [c.describe() for c in preview.changes]


def test_no_base_is_an_error_not_a_first_deploy(git_repo: Path) -> None:
    with pytest.raises(UsageError, match="no base to judge against"):
        build_preview(git_repo, "prod", None)


def test_base_without_the_stack_file(git_repo: Path) -> None:
    (git_repo / "Pulumi.dev.yaml").write_text("config:\n  dualstack-inference:ascendWeight: '0'\n")
    preview = build_preview(git_repo, "dev", "main")
    assert preview.base is None and "does not exist at" in (preview.base_note or "")
    assert preview.diff == ""


def test_unknown_ref_is_an_error(git_repo: Path) -> None:
    with pytest.raises(StackFileError, match="'nope' is not a commit"):
        build_preview(git_repo, "prod", "nope")


def test_default_base_is_merge_base_with_main(git_repo: Path) -> None:
    main_head = git(git_repo, "rev-parse", "HEAD").strip()
    git(git_repo, "checkout", "-q", "-b", "step-20")
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    git(git_repo, "commit", "-qam", "prod: ascendWeight 20")
    assert default_base(git_repo) == main_head


def test_default_base_outside_git(tmp_path: Path) -> None:
    assert default_base(tmp_path) is None


def test_cli_preview_on_a_branch(git_repo: Path) -> None:
    git(git_repo, "checkout", "-q", "-b", "step-20")
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    git(git_repo, "commit", "-qam", "prod: ascendWeight 20")
    done = dualstack("preview", "--stack", "prod", cwd=git_repo)
    assert done.returncode == 0, done.stderr
    assert "Ascend weight: 5% -> 20%" in done.stdout
    assert "+      weight: 20" in done.stdout


def test_cli_preview_next_step(git_repo: Path) -> None:
    done = dualstack("preview", "--stack", "staging", "--next", cwd=git_repo)
    assert done.returncode == 0, done.stderr
    assert "Ascend weight: 20% -> 50%" in done.stdout


def test_make_preview_says_it_previews_the_next_step(git_repo: Path) -> None:
    """`make preview` runs the Makefile's recipe, `preview --stack $(STACK) --next`: its first
    line says it shows the step after the stack file's weight, not the working tree, and how
    to preview the working tree; the README says the same without a parenthesis."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\npreview: venv\n", 1)[1].splitlines()[0].strip()
    assert recipe == "$(PY) -m dualstack preview --stack $(STACK) --next"
    argv = recipe.replace("$(PY) -m dualstack ", "").replace("$(STACK)", "prod").split()
    set_config_values(git_repo, "prod", {"ascendWeight": 20})  # a branch that raised it already
    done = dualstack(*argv, cwd=git_repo)
    assert done.stderr.splitlines()[0] == (
        "--next: previewing ascendWeight 50, the ladder step after the stack file's 20%, as "
        "`dualstack promote --stack prod` would write it; `dualstack preview --stack prod` "
        "previews the working tree as it is"
    )
    assert "Ascend weight: 5% -> 50%" in done.stdout  # why the working tree's own preview
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert (
        "`make preview` runs `dualstack preview --stack prod --next`: it previews the ladder "
        "step after the stack file's weight"
    ) in readme


def test_set_config_value_changes_one_line_and_keeps_comments(git_repo: Path) -> None:
    before = (git_repo / "Pulumi.prod.yaml").read_text()
    previous = set_config_values(git_repo, "prod", {"ascendWeight": 20})["ascendWeight"]
    after = (git_repo / "Pulumi.prod.yaml").read_text()
    assert previous == "5"
    diff = git(git_repo, "diff", "-U0", "--", "Pulumi.prod.yaml")
    changed = [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed == [
        '-  dualstack-inference:ascendWeight: "5"',
        '+  dualstack-inference:ascendWeight: "20"',
    ]
    assert before.splitlines()[0] == after.splitlines()[0]  # the comment survives


def test_a_stack_in_a_subfolder_without_code_names_the_way_out(git_repo, capsys):
    """`-C examples/fleet preview`: the base's judge runs the code beside the stack file, and
    the example's folder has none. One line naming `make example` and a repository of its own,
    before any base is started; `render` still works there, as the line says."""
    example = git_repo / "examples" / "fleet"
    example.mkdir(parents=True)
    shutil.copy(EXAMPLE_FLEET / "Pulumi.yaml", example / "Pulumi.yaml")
    shutil.copy(EXAMPLE_FLEET / "Pulumi.fleet.yaml", example / "Pulumi.fleet.yaml")
    git(git_repo, "add", ".")
    git(git_repo, "commit", "-qm", "the example fleet")
    assert main(["-C", str(example), "preview"]) == 2
    assert capsys.readouterr().err == (
        "error: the base's judge runs the code beside the stack's Pulumi.yaml, but "
        "examples/fleet holds stack files only (the code is at the repository's root): `make "
        "example` previews this example from a scratch repository holding the code; a stack of "
        "your own needs a repository of its own with the code beside its Pulumi.yaml "
        "(docs/trust-model.md); `render` works from here\n"
    )
    assert (
        main(["-C", str(example), "promote", "--service", "chat", "--skip-gate", "--reason", "x"])
        == 2
    )
    assert "holds stack files only" in capsys.readouterr().err
    assert main(["-C", str(example), "render", "--stack", "fleet"]) == 0
    assert "kind: VirtualService" in capsys.readouterr().out


def test_unchanged_objects_are_one_line_and_diff_shows_everything(git_repo: Path, capsys):
    """As `pulumi preview` ("N unchanged", `--diff`): a step lists the two objects it changes
    and sums up the rest in one line; `--diff` lists every object and each change whole."""
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    assert main(["-C", str(git_repo), "preview", "-s", "prod"]) == 0
    out = capsys.readouterr().out
    objects = out.split("Objects: ", 1)[1].split("\n\n", 1)[0].splitlines()
    assert objects == [
        "25 (2 changed, 0 added, 0 removed)",
        "  ~ PrometheusRule inference/inference-service-dualstack",
        "  ~ VirtualService inference/inference-vs",
        "    23 unchanged (--diff lists them, with each change whole)",
    ]
    assert "-      weight: 95\n+      weight: 80\n" in out
    assert "kind: VirtualService" not in out  # 3 lines of context only
    assert main(["-C", str(git_repo), "preview", "-s", "prod", "--diff"]) == 0
    full = capsys.readouterr().out
    listed = full.split("Objects: ", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(listed) == 1 + 25 and "    Deployment inference/inference-blue" in listed
    assert " kind: VirtualService\n" in full  # the changed object whole, as context
    assert "-      weight: 95\n+      weight: 80\n" in full
    assert main(["-C", str(git_repo), "preview", "-s", "prod", "-o", "json"]) == 0
    (stack,) = json.loads(capsys.readouterr().out)["stacks"]
    assert len(stack["changes"]) == 25  # the document keeps every object
