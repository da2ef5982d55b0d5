"""The `dualstack` command line as a user runs it: real processes, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO


def dualstack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m dualstack ARGS` in `cwd` (`project_copy`: the project with the fixture stacks)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "dualstack", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_render_prints_every_object_as_yaml(project_copy) -> None:
    done = dualstack("render", "--stack", "prod", cwd=project_copy)
    assert done.returncode == 0, done.stderr
    docs = list(yaml.safe_load_all(done.stdout))
    assert {d["kind"] for d in docs} >= {
        "Node",
        "Deployment",
        "Service",
        "DestinationRule",
        "VirtualService",
        "PodDisruptionBudget",
    }


def test_render_output_dir_writes_one_file_per_object(project_copy, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    done = dualstack("render", "--stack", "staging", "--output", out, cwd=project_copy)
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "virtualservice-inference-staging-inference-vs.yaml" in files
    assert "node-ascend-01.yaml" in files
    vs = yaml.safe_load(
        (tmp_path / "out" / "virtualservice-inference-staging-inference-vs.yaml").read_text()
    )
    assert [r["weight"] for r in vs["spec"]["http"][-1]["route"]] == [80, 20]


def test_bad_weight_is_one_line_and_renders_nothing(project_copy) -> None:
    for value, fragment in [
        ("150", "less than or equal to 100"),
        ("abc", "expected a whole number"),
        ("33", "not a ladder step"),
    ]:
        set_weight = f"ascendWeight={value}"
        done = dualstack("render", "--stack", "prod", "--set", set_weight, cwd=project_copy)
        assert done.returncode == 2
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1 and fragment in done.stderr
        assert done.stderr.startswith(f"error: dualstack-inference:ascendWeight = '{value}'")


def test_unknown_stack_names_the_stacks_that_exist(project_copy) -> None:
    done = dualstack("render", "--stack", "qa", cwd=project_copy)
    assert done.returncode == 2
    assert "no stack file Pulumi.qa.yaml" in done.stderr and "prod, staging" in done.stderr


def test_malformed_set_is_a_usage_error(project_copy) -> None:
    done = dualstack("render", "-s", "prod", "--set", "ascendWeight", cwd=project_copy)
    assert done.returncode == 2 and "expected KEY=VALUE" in done.stderr


def test_outside_a_repo_says_where_it_looked(tmp_path: Path) -> None:
    done = dualstack("render", cwd=tmp_path)
    assert done.returncode == 2 and "no Pulumi.yaml" in done.stderr


def test_only_the_chosen_command_is_loaded() -> None:
    from dualstack.cli import chosen_command

    assert chosen_command(["-C", "/repo", "precision-check", "--nvidia", "x"]) == "precision_check"
    assert chosen_command(["--cwd", "render", "render"]) == "render"
    assert chosen_command(["--help"]) is None
    assert chosen_command(["nosuch"]) is None


def test_unknown_command_is_one_line_listing_the_commands(project_copy) -> None:
    done = dualstack("nosuch", cwd=project_copy)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "'render'" in done.stderr and "'ci'" in done.stderr


def imported_modules(*args: str, cwd: Path) -> list[str]:
    """Every module a fresh `python -X importtime -m dualstack ARGS` imports by an import
    statement, by name (importlib.import_module's own module is not listed)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dualstack", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    return [line.rsplit("|", 1)[1].strip() for line in lines[1:]]  # [0]: the header


def loaded_modules(*args: str, cwd: Path) -> list[str]:
    """`sys.modules` of a fresh interpreter after `dualstack ARGS` (`cli.main`) returned."""
    program = (
        "import json, sys\nfrom dualstack.cli import main\ncode = main(sys.argv[1:])\n"
        "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    code, modules = json.loads(done.stderr.splitlines()[-1])
    assert code == 0, done.stderr
    return modules


def test_version_and_help_import_neither_pulumi_nor_the_settings_models(tmp_path: Path) -> None:
    for args in (("--version",), ("--help",)):
        modules = imported_modules(*args, cwd=tmp_path)
        assert "dualstack.cli" in modules  # the list is the real one
        assert [m for m in modules if m.startswith("pulumi")] == [], args
        assert [m for m in modules if m.startswith("pydantic")] == [], args
        # nor the precision checker's package (its CLI, http.client): only an error line
        # needs its redaction
        assert [m for m in modules if m.startswith(("precision_check", "http"))] == [], args
        loaded = loaded_modules(*args, cwd=tmp_path)
        assert [m for m in loaded if m.startswith(("dualstack.commands", "pulumi"))] == [], args
    pipeline_steps = loaded_modules("ci", "--help", cwd=tmp_path)  # `ci report`, `ci junit`...
    assert "dualstack.commands.ci" in pipeline_steps
    assert [m for m in pipeline_steps if m.startswith("pulumi")] == []


def test_no_verb_but_the_pack_runners_imports_pulumi_to_register(tmp_path: Path) -> None:
    """The program's builders import no Pulumi (issue 29): a verb's parser loads it only
    through the policy pack's runner (pulumi_policy), which `policy-config` imports."""
    for verb in ("render", "preview", "status", "gate", "promote", "rollback", "ci"):
        modules = loaded_modules(verb, "--help", cwd=tmp_path)
        assert f"dualstack.commands.{verb}" in modules  # the list is the real one
        assert [m for m in modules if m.split(".")[0] in ("pulumi", "pulumi_kubernetes")] == []


HEAVY = ("pulumi", "pydantic", "ruamel", "components")
"""What the program and the stack files load: the settings models (pydantic), the stack-file
reader (ruamel.yaml), the program (components, pulumi)."""


def modules_of(module: str, cwd: Path) -> list[str]:
    """`sys.modules` of a fresh interpreter after `import MODULE`."""
    program = f"import json, sys\nimport {module}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_preview_starts_the_base_judge_before_loading_the_program(tmp_path: Path) -> None:
    """`dualstack preview` starts the base's judge first, so the base renders while this
    process loads the program: the judge client and the verb load none of it, nor the
    settings or the stack-file reader (a path rule reached through `repo.changes` once pulled
    them all in)."""
    for module in ("dualstack.offline.judge_client", "dualstack.commands.preview"):
        modules = modules_of(module, tmp_path)
        assert module in modules and "dualstack.repo.changes" in modules  # the real list
        assert [m for m in modules if m.split(".")[0] in HEAVY] == [], module


def test_help_lists_every_command_as_its_own_parser_describes_it() -> None:
    from dualstack.cli import build_parser

    listing = build_parser().format_help()
    assert listing == build_parser(every=True).format_help()
    for verb in ("render", "policy-config", "verify-precision", "completion"):
        assert f"    {verb}" in listing


def test_an_abbreviated_option_before_the_command_still_finds_it(project_copy) -> None:
    done = dualstack("--cw", str(project_copy), "render", "-s", "nosuch", cwd=project_copy.parent)
    assert done.returncode == 2
    assert done.stderr.startswith("error: no stack file Pulumi.nosuch.yaml")
