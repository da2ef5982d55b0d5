"""The lockfiles against pyproject.toml and the pipelines: every declared dependency is locked
at a version its specifier allows, with hashes; both lockfiles agree; the Pulumi SDK is the
version of the Pulumi CLI every pipeline installs; too old a kubernetes-validate is one line."""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from dualstack.offline.schemas import SchemaError, object_errors
from tests.conftest import REPO

PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^ \\]+)", re.M)


def locked(name: str) -> dict[str, str]:
    """{canonical package name: version} pinned in REPO/<name>."""
    return {canonicalize_name(n): v for n, v in PIN.findall((REPO / name).read_text())}


def declared(extra: str | None = None) -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    found = project["dependencies"]
    if extra:
        found = found + project["optional-dependencies"][extra]
    return [Requirement(text) for text in found]


@pytest.mark.parametrize(
    ("lockfile", "extra"), [("requirements.lock", None), ("requirements-dev.lock", "dev")]
)
def test_every_declared_dependency_is_locked_within_its_specifier(lockfile, extra):
    pins = locked(lockfile)
    for requirement in declared(extra):
        version = pins.get(canonicalize_name(requirement.name))
        assert version is not None, f"{requirement.name} missing from {lockfile} (make lock)"
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{lockfile}: {requirement.name}=={version} outside {requirement.specifier}"
        )


@pytest.mark.parametrize("lockfile", ["requirements.lock", "requirements-dev.lock"])
def test_every_pin_has_hashes_and_the_build_backend_is_locked(lockfile):
    text = (REPO / lockfile).read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", text.split("\n", 6)[-1])
    pinned = [e for e in entries if PIN.match(e)]
    assert pinned and all("--hash=sha256:" in entry for entry in pinned)
    assert "setuptools" in locked(lockfile)  # `make venv` builds without isolation


def test_runtime_and_dev_lockfiles_agree():
    runtime, dev = locked("requirements.lock"), locked("requirements-dev.lock")
    assert {name: dev.get(name) for name in runtime} == runtime


def pipeline_pulumi_versions() -> dict[str, str]:
    found = {}
    for path in [*sorted((REPO / ".github" / "workflows").glob("*.yml")), REPO / ".gitlab-ci.yml"]:
        for version in re.findall(r'PULUMI_VERSION: "([0-9.]+)"', path.read_text()):
            found[str(path.relative_to(REPO))] = version
    return found


def test_the_sdk_is_the_cli_version_every_pipeline_installs():
    versions = pipeline_pulumi_versions()
    assert set(versions) == {
        ".github/workflows/deploy.yml",
        ".github/workflows/emergency-rollback.yml",
        ".github/workflows/pr-judge.yml",
        ".gitlab-ci.yml",
    }
    sdk = locked("requirements.lock")["pulumi"]
    assert set(versions.values()) == {sdk} == {"3.272.0"}
    (pulumi,) = [r for r in declared() if r.name == "pulumi"]
    assert str(pulumi.specifier) == f"=={sdk}"


def test_an_unsupported_kubernetes_version_is_one_line_not_a_traceback():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    assert object_errors(config_map, "1.32") == []
    with pytest.raises(SchemaError) as caught:
        object_errors(config_map, "1.99")
    assert re.fullmatch(
        r"kubernetes-validate [0-9.]+ has no schemas for Kubernetes 1\.99: install "
        r"kubernetes-validate>=1\.32 \(`make venv` installs the locked one\)",
        str(caught.value),
    )
