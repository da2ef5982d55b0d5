"""Proof of identity (issue 29): the offline render, built from the program's pure builders
without the engine (`dualstack.offline.direct`), equals the Pulumi program run under mocks
(`dualstack.offline.render.run_program`, the oracle), byte for byte in YAML and registration
for registration: the same set of (type token, logical name, parent).

Over every committed stack (read for the comparison only: the test asserts that the two paths
agree, never what a stack holds, so it passes at any rung), the fixture stacks, the example
fleet, generated fleets of 1, 10 and 50 services, and variants reaching every branch of the
builders. Also: a config the program refuses is refused alike, and `dualstack render` imports
no Pulumi.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dualstack.offline.direct import registrations
from dualstack.offline.render import (
    RenderError,
    objects_of,
    program_fleet,
    program_objects,
    run_program,
    to_yaml,
)
from dualstack.repo.stack_config import apply_overrides
from dualstack.repo.stackfile import read_config, stacks
from tests.conftest import FIXTURE_STACKS, REPO, cfg, fixture_config, fleet_config
from tests.support.fleets import fleet

VARIANTS = {
    "gateway-api": ["router=gateway-api"],
    "gateway-api-with-istio-gateways": [
        "router=gateway-api",
        'istio.gateways=["istio-system/public"]',
        'gatewayApi.gateways=[{"name": "public", "namespace": "gateways"}]',
    ],
    "istio-v1beta1": ["istio.apiVersion=networking.istio.io/v1beta1"],
    "cron-schedule": ["precisionCheck.schedule=@daily"],
    "network-policy-off": ["security.networkPolicy.enabled=false"],
    "monitoring-off": ["monitoring.enabled=false"],
    "dashboard-off": ["monitoring.dashboard.enabled=false"],
    "dashboard-folder": ["monitoring.dashboard.folder=Inference"],
    "precision-off": ["precisionCheck.enabled=false"],
    "shadow-rung": ["ascendWeight=0", "mirrorPercent=10"],
    "weight-0": ["ascendWeight=0"],
    "weight-100": ["ascendWeight=100"],
    "tester-pinning-off": ["testerPinning.enabled=false"],
    "force-patch": ["nvidia.pool.forcePatch=true"],
}
"""`--set` overrides of the fixture prod stack, one branch of the builders each."""

MEMBER_OVERRIDES = {
    "chat": {
        "mirrorPercent": 10,
        "ascendWeight": 0,
        "istio": {"apiVersion": "networking.istio.io/v1beta1"},
        "precisionCheck": {"schedule": "@hourly", "mode": "accuracy"},
    },
    "embedder": {"precisionCheck": {"enabled": False}, "probes": {"periodSeconds": 5}},
}
"""Per-member settings layered over the example fleet."""


def _overridden_fleet() -> dict[str, Any]:
    config = fleet_config()
    services = config["dualstack-inference:services"]
    for name, keys in MEMBER_OVERRIDES.items():
        services[name] = {**services[name], **keys}
    return config


CASES: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    **{
        f"fixture-{stack}": (stack, lambda s=stack: fixture_config(s))
        for stack in ("prod", "staging")
    },
    "example-fleet": ("fleet", fleet_config),
    "example-fleet-gateway-api": (
        "fleet",
        lambda: apply_overrides(fleet_config(), ["router=gateway-api"]),
    ),
    "example-fleet-member-overrides": ("fleet", _overridden_fleet),
    **{f"fleet-{size}": (f"fleet{size}", lambda n=size: cfg(**fleet(n))) for size in (1, 10, 50)},
    **{
        f"prod-{name}": ("prod", lambda sets=sets: apply_overrides(fixture_config("prod"), sets))
        for name, sets in VARIANTS.items()
    },
}
"""Each case's stack name and config."""


def assert_same_render(config: dict[str, Any], stack: str) -> None:
    """The direct render of `config` equals the mocked program's: YAML byte for byte, and the
    same (type token, logical name, parent) for every registration."""
    mocked = run_program(config, stack)
    direct = registrations(program_fleet(config), stack)
    assert {(r.type_, r.name, r.parent) for r in direct} == {
        (r.type_, r.name, r.parent) for r in mocked
    }
    assert len(direct) == len(mocked)  # no registration twice on either side
    assert to_yaml(objects_of(direct)) == to_yaml(objects_of(mocked))


@pytest.mark.parametrize("case", CASES)
def test_direct_render_equals_the_mocked_program(case: str) -> None:
    stack, config = CASES[case]
    assert_same_render(config(), stack)


@pytest.mark.reads_committed_stacks  # compared between the two paths only: passes at any rung
@pytest.mark.parametrize("stack", stacks(REPO))
def test_direct_render_equals_the_mocked_program_for_a_committed_stack(stack: str) -> None:
    assert_same_render(read_config(REPO, stack), stack)


def test_every_registration_has_a_parent_in_the_tree() -> None:
    direct = registrations(program_fleet(fleet_config()), "fleet")
    components = {r.name for r in direct if not r.custom}
    assert [r.name for r in direct if r.parent is None] == ["inference"]
    assert {r.parent for r in direct if r.parent is not None} <= components
    assert {r.parent for r in run_program(fleet_config(), "fleet") if r.custom} <= components


def test_the_render_asks_no_resolver(monkeypatch) -> None:
    """The precision Job's backend URLs are cluster-local names: the render compares them as
    text and never waits on DNS (it once asked twice per service)."""
    import socket

    def no_resolver(*args, **kwargs):
        raise AssertionError(f"getaddrinfo{args}")

    monkeypatch.setattr(socket, "getaddrinfo", no_resolver)
    objects = program_objects(fleet_config(), "fleet")
    assert len([o for o in objects if o["kind"] == "Job"]) == 3


def test_a_config_the_program_refuses_is_refused_alike() -> None:
    config = cfg(ascendWeight="101")
    with pytest.raises(RenderError) as mocked:
        run_program(config, "prod")
    with pytest.raises(RenderError) as direct:
        program_objects(config, "prod")
    assert str(direct.value) == str(mocked.value)
    assert "ascendWeight" in str(direct.value)


def test_dualstack_render_imports_no_pulumi(tmp_path: Path) -> None:
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(FIXTURE_STACKS / "Pulumi.prod.yaml", tmp_path / "Pulumi.prod.yaml")
    command = [sys.executable, "-X", "importtime", "-m", "dualstack", "-C", str(tmp_path)]
    done = subprocess.run(
        [*command, "render", "--stack", "prod"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "kind: Deployment" in done.stdout
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "components.workloads" in imported  # the builders ran in this process
    engine = {name for name in imported if name.split(".")[0] in ("pulumi", "pulumi_kubernetes")}
    assert engine == set()
    assert not {name for name in imported if name.split(".")[0] == "grpc"}
