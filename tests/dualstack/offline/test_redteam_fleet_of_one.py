"""Red team (issue 28): a single-service stack converted into a fleet of one, or back.

The conversion keeps the one service, so the base judges it as that service: with its deployed
weight (not a raise from 0) and its images and record, and an envelope that names what the
conversion really changes: the layout itself (`services`: the alerts, the dashboard and the
stack's outputs follow it) and the objects it renames (a member's Deployments, routes and
rules are named after it). Approved at the same weight it passes; a raise or an image change in
the same pull request is still refused. Each case is judged by `dualstack preview --stack prod
--base main` on a real git repository (`tests.support.judge_repos`), as in `test_redteam.py`.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from components.settings import PROJECT
from tests.support.judge_repos import V123, V124, commit, make_repo, preview

P = f"{PROJECT}:"
SP = "Pulumi.prod.yaml"
NV, AS = V123["nvidia"], V123["ascend"]
EVIL = "evil.example/inference-service:v1.2.3-cuda"
JUMP = "no-unsafe-weight-jump"
ENVELOPE = "safety-envelope-unchanged"
VERIFIED = "precision-verified-before-promotion"
APPROVED = ("--owner-approved",)


def pairs(*verified: dict[str, str], indent: str) -> str:
    """`verifiedImages` lines for `verified`, at `indent`."""
    lines = [
        f"{indent}- {{nvidia: {pair['nvidia']}, ascend: {pair['ascend']}}}\n" for pair in verified
    ]
    return "".join(lines)


def single(weight: int, *verified: dict[str, str]) -> str:
    """A prod stack without `services` at `weight`, `verified` (default: the v1.2.3 pair)."""
    record = pairs(*(verified or (V123,)), indent="    ")
    return f'config:\n  {P}ascendWeight: "{weight}"\n  {P}verifiedImages:\n{record}'


def fleet_of_one(
    weight: int,
    name: str = "inference-service",
    images: dict[str, str] = V123,
    verified: tuple[dict[str, str], ...] = (V123,),
    extra: str = "",
) -> str:
    """A prod stack declaring `services: {name: ...}` at `weight`, serving `images`, its record
    `verified` (what the verification job wrote at the base), plus `extra` member lines."""
    return (
        f"config:\n  {P}services:\n    {name}:\n      ascendWeight: {weight}\n"
        f"      nvidia:\n        image: {images['nvidia']}\n"
        f"      ascend:\n        image: {images['ascend']}\n"
        f"      verifiedImages:\n{pairs(*verified, indent='        ')}{extra}"
    )


KEEP_NAMES = (
    "      istio: {virtualServiceName: inference-vs, destinationRuleName: inference-dr}\n"
    "      gatewayApi: {routeName: inference-route}\n"
)
"""Member lines keeping the single service's route and rule names."""


class Case(NamedTuple):
    name: str
    head: str  # the prod stack file the pull request writes
    code: int  # 0 passes, 1 a policy refuses
    first: str = ""  # a piece of stderr's first line ("" when it passes)
    base: str = single(5)  # the prod stack file on main
    args: tuple[str, ...] = ()


UNSAFE = [
    Case("conversion at 5, unapproved (renames its objects)", fleet_of_one(5), 1, ENVELOPE),
    Case("conversion at 5 as chat, unapproved", fleet_of_one(5, "chat"), 1, ENVELOPE),
    Case("conversion raising 5->20, approved", fleet_of_one(20), 1, ENVELOPE, args=APPROVED),
    Case("conversion raising 5->50, approved", fleet_of_one(50), 1, JUMP, args=APPROVED),
    Case("conversion raising 0->20, approved", fleet_of_one(20), 1, JUMP, single(0), APPROVED),
    Case(
        "conversion swapping the NVIDIA image, approved",
        fleet_of_one(5, images={**V123, "nvidia": EVIL}),
        1,
        VERIFIED,
        args=APPROVED,
    ),
    Case(
        "conversion to an unverified pair, approved",
        fleet_of_one(5, images=V124),
        1,
        VERIFIED,
        args=APPROVED,
    ),
    Case(
        "conversion to a pair verified at the base, approved",
        fleet_of_one(5, images=V124, verified=(V123, V124)),
        1,
        ENVELOPE,
        single(5, V123, V124),
        APPROVED,
    ),
    Case(
        "conversion writing its own record, unapproved",
        fleet_of_one(5, images=V124, verified=(V123, V124)),
        1,
        ENVELOPE,
    ),
    Case(
        "back to one service raising 20->50, approved",
        single(50),
        1,
        ENVELOPE,
        fleet_of_one(20),
        APPROVED,
    ),
    Case("back to one service at 5, unapproved", single(5), 1, ENVELOPE, fleet_of_one(5)),
]

LEGITIMATE = [
    Case("conversion at 5, approved", fleet_of_one(5), 0, args=APPROVED),
    Case("conversion at 5 as chat, approved", fleet_of_one(5, "chat"), 0, args=APPROVED),
    Case("conversion at 0, approved", fleet_of_one(0), 0, base=single(0), args=APPROVED),
    Case("conversion at 100, approved", fleet_of_one(100), 0, base=single(100), args=APPROVED),
    Case(
        "conversion stepping down 20->5, approved",
        fleet_of_one(5),
        0,
        base=single(20),
        args=APPROVED,
    ),
    Case("back to one service at 5, approved", single(5), 0, base=fleet_of_one(5), args=APPROVED),
    Case(
        "back to one service at 80, approved",
        single(80),
        0,
        base=fleet_of_one(80),
        args=APPROVED,
    ),
]


def judged(tmp_path, capsys, base: str, head: str, *args: str) -> tuple[int, str, str]:
    """`dualstack preview --stack prod --base main ARGS` of `head` over `base`."""
    repo = make_repo(tmp_path)
    (repo / SP).write_text(base, encoding="utf-8")
    commit(repo, "the base")
    (repo / SP).write_text(head, encoding="utf-8")
    return preview(repo, capsys, *args)


@pytest.mark.parametrize("case", UNSAFE + LEGITIMATE, ids=lambda case: case.name)
def test_the_base_judges_a_fleet_of_one_conversion(tmp_path, capsys, case):
    code, _out, err = judged(tmp_path, capsys, case.base, case.head, *case.args)
    first = err.splitlines()[0] if err else ""
    assert (code, case.first in first) == (case.code, True), err


def envelope_section(out: str) -> list[str]:
    """The report's `Safety envelope:` line and the change lines under it."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Safety envelope:"))
    section = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        section.append(line)
    return section


MEMBER = "  services.inference-service"
RENAMES = [
    '  services: (unset) -> ["inference-service"]',
    f"{MEMBER}.ascend.deploymentName: inference-green -> inference-service-green",
    f"{MEMBER}.gatewayApi.routeName: inference-route -> inference-service-route",
    f"{MEMBER}.istio.destinationRuleName: inference-dr -> inference-service-dr",
    f"{MEMBER}.istio.virtualServiceName: inference-vs -> inference-service-vs",
    f"{MEMBER}.nvidia.deploymentName: inference-blue -> inference-service-blue",
]
"""What converting the fixture prod stack into `services: {inference-service: ...}` changes."""


def test_the_envelope_of_a_conversion_names_what_it_really_changes(tmp_path, capsys):
    code, out, err = judged(tmp_path, capsys, single(5), fleet_of_one(5))
    assert code == 1, err
    assert envelope_section(out) == [
        f"Safety envelope: {len(RENAMES)} changes, needs the owners' approval",
        *RENAMES,
    ]
    assert "Ascend weight: unchanged at 5%" in out
    assert err.splitlines()[0] == f"policy check failed: {ENVELOPE}"


def test_an_approved_conversion_is_judged_from_the_deployed_weight(tmp_path, capsys):
    code, out, err = judged(tmp_path, capsys, single(20), fleet_of_one(20), *APPROVED)
    assert (code, err) == (0, "")
    assert envelope_section(out)[0] == (
        f"Safety envelope: {len(RENAMES)} changes, approved by the owners (--owner-approved)"
    )
    assert "previous weight 20%" in out
    assert "raises" not in out


def test_a_conversion_keeping_the_names_changes_only_the_layout(tmp_path, capsys):
    """A member that keeps every object name the single service had: what is left is the
    layout itself (one fact), which the owners approve."""
    head = (
        f"config:\n  {P}services:\n    inference-service:\n      ascendWeight: 5\n"
        f"      nvidia: {{image: {NV}, deploymentName: inference-blue}}\n"
        f"      ascend: {{image: {AS}, deploymentName: inference-green}}\n"
        f"      verifiedImages:\n{pairs(V123, indent='        ')}{KEEP_NAMES}"
    )
    code, out, err = judged(tmp_path, capsys, single(5), head)
    assert code == 1, err
    assert envelope_section(out) == [
        "Safety envelope: 1 change, needs the owners' approval",
        RENAMES[0],
    ]
    code, out, err = preview(tmp_path / "gitops", capsys, *APPROVED)
    assert (code, err) == (0, "")
    moved = [line for line in out.splitlines() if line[:4] in ("  + ", "  - ", "  ~ ")]
    assert moved == [  # what the layout changes: the alerts and the dashboard
        "  + ConfigMap inference/dualstack-fleet-dashboard-inference",
        "  - ConfigMap inference/inference-service-dualstack-dashboard-inference",
        "  ~ PrometheusRule inference/inference-service-dualstack",
    ]


@pytest.mark.parametrize(
    ("base", "head"),
    [(single(20), fleet_of_one(20, "chat")), (fleet_of_one(20, "chat"), single(20))],
    ids=["into a fleet of one", "back to one service"],
)
def test_the_report_shows_the_base_s_service_under_the_head_s_name(tmp_path, capsys, base, head):
    """The header lines compare with the base's one service whatever the head calls it: its
    weight, replicas and record (not 'a service new in the head', not 'NOT verified')."""
    code, out, err = judged(tmp_path, capsys, base, head, *APPROVED)
    assert (code, err) == (0, "")
    assert "Ascend weight: unchanged at 20% (ladder step 2 of 5, next 50%)" in out
    assert f"Ascend image: {AS} (precision-verified at the base)" in out
    assert "previous weight 20%" in out
