"""The pack over the program's rendered stack: traffic is judged by where it goes.

The head is rendered from fixture configs (never the committed stack files); a change to the
traffic code is simulated by patching `components.routers.istio.spec`, the way a
pull request would edit it. The policy config is what `dualstack preview --base` writes: the
previous weight and step limit of the base.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest

import components.routers.istio
from components.naming import direct_service_name, service_host
from components.settings import Settings
from dualstack.cli import main
from dualstack.offline.policy_run import PolicyResult, blocking, run_policies
from dualstack.offline.render import render
from tests.conftest import cfg
from tests.support.pack_config import single_pack_config

VERIFIED = "registry/inference-service:v1.2.3-npu"
RUNGS = (0, 5, 20, 50, 80, 100)


def stack_config(weight: int) -> dict[str, Any]:
    """A fixture prod config at `weight`, its Ascend image verified."""
    return cfg(ascendWeight=str(weight), verifiedAscendImage=VERIFIED)


def judged(weight: int, previous: int | None) -> list[PolicyResult]:
    """The pack's results over the head at `weight`, judged against a base at `previous`
    (None: a first deploy, no base) that differs from it in the weight only (no envelope
    change)."""
    head_settings, head_objects = render(stack_config(weight), "prod")
    base_settings = render(stack_config(previous), "prod")[0] if previous is not None else None
    config = single_pack_config(head_settings, previous, base_settings, envelope=())
    return run_policies(head_objects, config, "prod")


def failing(results: list[PolicyResult]) -> dict[str, list[str]]:
    """The blocking messages, by policy."""
    found: dict[str, list[str]] = {}
    for result in blocking(results):
        found.setdefault(result.policy, []).append(result.message)
    return found


@pytest.fixture
def patch_routes(monkeypatch) -> Callable[[Callable[[Settings, list[dict]], None]], None]:
    """Make the program emit its usual VirtualService edited by `edit(settings, http)`."""

    def patch(edit: Callable[[Settings, list[dict]], None]) -> None:
        real = components.routers.istio.spec

        def edited(settings: Settings, weights: dict[str, int]) -> dict[str, Any]:
            spec = real(settings, weights)
            edit(settings, spec["http"])
            return spec

        monkeypatch.setattr(components.routers.istio, "spec", edited)

    return patch


@pytest.mark.parametrize(
    ("previous", "weight"),
    [(None, 0), *pairwise(RUNGS), *((w, w) for w in RUNGS)],
)
def test_the_program_s_stack_passes_at_every_rung(previous, weight):
    """One rung up, or unchanged, with host+subset routes: nothing blocks."""
    assert failing(judged(weight, previous)) == {}


def test_a_first_deploy_serving_traffic_needs_the_base_s_verification_record():
    """No base, no evidence: the head's own verifiedAscendImage verifies nothing (issue 11)."""
    assert set(failing(judged(5, None))) == {"precision-verified-before-promotion"}


@pytest.mark.parametrize(("previous", "weight"), [(100, 80), (80, 0), (100, 0), (50, 5)])
def test_any_decrease_passes(previous, weight):
    assert failing(judged(weight, previous)) == {}


def direct_ascend_host(settings: Settings) -> str:
    return service_host(settings, direct_service_name(settings, "ascend"))


def test_a_route_to_the_ascend_service_host_is_refused(patch_routes):
    """Measured on main: a route placed first to the Ascend direct Service's host, no subset,
    sent 100% to Ascend while every policy passed."""
    patch_routes(
        lambda settings, http: http.insert(
            0,
            {"name": "direct", "route": [{"destination": {"host": direct_ascend_host(settings)}}]},
        )
    )
    found = failing(judged(5, 5))
    assert set(found) == {"no-unsafe-weight-jump", "rollback-capacity"}
    [jump] = found["no-unsafe-weight-jump"]
    assert jump == (
        "VirtualService inference/inference-vs raises the Ascend weight from 5% to 100%: an "
        "increase may go only to the next ladder step, 20%. Set ascendWeight to 20 (decreases "
        "are always allowed); route 'direct' sends it to Deployment inference/inference-green"
    )
    [capacity] = found["rollback-capacity"]
    assert capacity.startswith("Deployment inference/inference-green has 2 replicas for 100%")


def test_the_ascend_host_as_a_third_destination_of_the_split_is_refused(patch_routes):
    """Both subsets still named (nvidia 0, ascend 5), weights summing to 100: only the
    resolved share shows the 95% sent to the Ascend host."""

    def edit(settings: Settings, http: list[dict]) -> None:
        nvidia, _ascend = http[-1]["route"]  # the split, after the pins
        nvidia["weight"] = 0
        http[-1]["route"].append(
            {"destination": {"host": direct_ascend_host(settings)}, "weight": 95}
        )

    patch_routes(edit)
    found = failing(judged(5, 5))
    assert "route-weights-valid" not in found
    [jump] = found["no-unsafe-weight-jump"]
    assert "raises the Ascend weight from 5% to 100%" in jump


def test_a_catch_all_route_placed_first_is_refused(patch_routes):
    """Measured on main: a match-all route to the Ascend subset ahead of the split."""

    def edit(settings: Settings, http: list[dict]) -> None:
        ascend = {"host": service_host(settings, settings.service.name), "subset": "ascend"}
        catch_all = {"name": "catch-all", "match": [{"uri": {"prefix": "/"}}]}
        http.insert(0, catch_all | {"route": [{"destination": ascend}]})

    patch_routes(edit)
    found = failing(judged(5, 5))
    assert set(found) == {"no-unsafe-weight-jump", "rollback-capacity"}
    [jump] = found["no-unsafe-weight-jump"]
    assert "raises the Ascend weight from 5% to 100%" in jump
    assert jump.endswith("route 'catch-all' sends it to Deployment inference/inference-green")


def test_a_destination_outside_the_stack_is_refused(patch_routes):
    patch_routes(
        lambda settings, http: http[-1]["route"][1]["destination"].update(
            host="inference.example.com", subset=None
        )
    )
    found = failing(judged(5, 5))
    where = (
        "VirtualService inference/inference-vs route 'nvidia-ascend-split' destination "
        "inference.example.com: inference.example.com is no Service of the stack"
    )
    assert any(m.startswith(where) for m in found["route-weights-valid"])
    for policy in ("no-unsafe-weight-jump", "rollback-capacity"):
        assert any(where in m for m in found[policy]), policy


def test_preview_names_the_policy_refusing_a_catch_all_route(stack_repo, patch_routes, capsys):
    """`dualstack preview --base main` on a fixture repo at 5%, the program patched to put a
    catch-all route to the Ascend subset first: exit 1, the policies named on stderr."""
    repo = stack_repo(5)

    def edit(settings: Settings, http: list[dict]) -> None:
        ascend = {"host": service_host(settings, settings.service.name), "subset": "ascend"}
        http.insert(0, {"name": "catch-all", "route": [{"destination": ascend}]})

    patch_routes(edit)
    code = main(["-C", str(repo), "preview", "--stack", "prod", "--base", "main"])
    captured = capsys.readouterr()
    assert code == 1, captured.out
    assert "Ascend weight: unchanged at 5%" in captured.out
    lines = captured.err.splitlines()
    assert lines[0] == "policy check failed: no-unsafe-weight-jump, rollback-capacity"
    assert (
        "  no-unsafe-weight-jump: VirtualService inference/inference-vs raises the Ascend weight "
        "from 5% to 100%"
    ) in captured.err
