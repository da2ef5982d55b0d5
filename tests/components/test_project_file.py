"""`Pulumi.yaml` as the Pulumi CLI reads it: what it declares, and what it documents."""

from __future__ import annotations

import re

import pytest
import yaml

from components.settings import PROJECT, Settings
from dualstack.repo.stackfile import read_config
from tests.conftest import REPO

PROJECT_FILE = REPO / "Pulumi.yaml"


def _project() -> dict:
    return yaml.safe_load(PROJECT_FILE.read_text(encoding="utf-8"))


def _stacks() -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in REPO.glob("Pulumi.*.yaml"))


def test_project_is_python_and_named_for_the_config_namespace() -> None:
    project = _project()
    assert project["name"] == PROJECT
    assert project["runtime"]["name"] == "python"


@pytest.mark.reads_committed_stacks  # key presence only: passes at every rung
def test_every_declared_key_without_default_is_set_by_every_stack() -> None:
    # Pulumi requires, in every stack, each key declared under `config:` without a default
    # (pulumi/pulumi#21797); a declared optional key would stop `pulumi preview` at once. A
    # fleet stack has no stack-level ascendWeight, so none is declared.
    required = [k for k, v in _project().get("config", {}).items() if "default" not in (v or {})]
    assert required == []
    for stack in _stacks():
        config = read_config(REPO, stack)
        missing = [k for k in required if f"{PROJECT}:{k}" not in config]
        assert missing == [], f"Pulumi.{stack}.yaml lacks {missing}"


def test_project_file_repeats_no_default() -> None:
    assert all("default" not in (v or {}) for v in _project().get("config", {}).values())


def test_every_settings_key_is_described() -> None:
    text = PROJECT_FILE.read_text(encoding="utf-8")
    described = set(_project().get("config", {}))
    described |= set(re.findall(r"^#   ([a-zA-Z]+)", text, re.M))
    described |= {"ascend"}  # documented on the `nvidia, ascend` line
    keys = {field.alias for field in Settings.model_fields.values()} | {"services"}
    assert keys - described == set()
