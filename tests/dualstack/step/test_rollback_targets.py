"""Targets of the emergency rollback's `pulumi up`, from a real git repo's stack files."""

from __future__ import annotations

from pathlib import Path

from dualstack.cli import main
from tests.pipelines.pipeline_stubs import set_weight

PARENT = "urn:pulumi:prod::dualstack-inference::dualstack:index:DualStackInference"
VS = (
    f"{PARENT}$dualstack:index:TrafficSplit$kubernetes:networking.istio.io/v1:VirtualService"
    "::inference-traffic-virtual-service"
)
NVIDIA = (
    f"{PARENT}$dualstack:index:InferenceWorkload$kubernetes:apps/v1:Deployment"
    "::inference-nvidia-deployment"
)
RULE = (
    f"{PARENT}$dualstack:index:UnifiedMonitoring"
    "$kubernetes:monitoring.coreos.com/v1:PrometheusRule::inference-monitoring-rules"
)
"""The PrometheusRule records the configured weight: without it AscendNoTraffic fires."""


def rolled_back(repo: Path, start: int, to: int) -> None:
    """Commit prod at `start`, then lower it to `to` in the working tree only."""
    set_weight(repo, "prod", start)
    path = repo / "Pulumi.prod.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(f'ascendWeight: "{start}"', f'ascendWeight: "{to}"'))


def targets(repo: Path, capsys) -> tuple[int, list[str], str]:
    code = main(["-C", str(repo), "ci", "rollback-targets", "--stack", "prod"])
    captured = capsys.readouterr()
    return code, captured.out.split(), captured.err


def test_below_100_the_virtual_service_and_the_recorded_weight(git_repo: Path, capsys) -> None:
    rolled_back(git_repo, 20, 0)
    assert targets(git_repo, capsys)[:2] == (0, [VS, RULE])


def test_leaving_100_resizes_nvidia_first(git_repo: Path, capsys) -> None:
    """At 100 % NVIDIA is scaled down to its retired size; traffic must not move first."""
    rolled_back(git_repo, 100, 80)
    assert targets(git_repo, capsys)[:2] == (0, [NVIDIA, VS, RULE])


def test_missing_stack_at_base_is_an_error(git_repo: Path, capsys) -> None:
    (git_repo / "Pulumi.canary.yaml").write_text(
        (git_repo / "Pulumi.prod.yaml").read_text(encoding="utf-8")
    )
    code = main(["-C", str(git_repo), "ci", "rollback-targets", "--stack", "canary"])
    assert code == 2
    assert capsys.readouterr().err.strip() == ("error: Pulumi.canary.yaml does not exist at HEAD")


def deploy_targets(repo: Path, deployed: int, capsys) -> list[str]:
    argv = ["-C", str(repo), "ci", "rollback-targets", "--stack", "prod"]
    assert main([*argv, "--deployed-weight", str(deployed)]) == 0
    return capsys.readouterr().out.split()


def test_deploy_of_a_decrease_targets_the_traffic_split(git_repo: Path, capsys) -> None:
    set_weight(git_repo, "prod", 20)
    assert deploy_targets(git_repo, 50, capsys) == [VS, RULE]


def test_deploy_of_a_decrease_from_100_resizes_nvidia_first(git_repo: Path, capsys) -> None:
    set_weight(git_repo, "prod", 80)
    assert deploy_targets(git_repo, 100, capsys) == [NVIDIA, VS, RULE]


def test_deploy_of_a_raise_or_no_change_targets_nothing(git_repo: Path, capsys) -> None:
    set_weight(git_repo, "prod", 20)
    assert deploy_targets(git_repo, 5, capsys) == []
    assert deploy_targets(git_repo, 20, capsys) == []


FLEET = "urn:pulumi:fleet::dualstack-inference::dualstack:index:DualStackInference"


def _fleet_urn(kind: str, name: str) -> str:
    return f"{FLEET}${kind}::{name}"


def fleet_repo(repo: Path) -> Path:
    """`repo` with the example fleet (chat 50%, embedder 20%, reranker 0%) committed."""
    import shutil

    from tests.conftest import EXAMPLE_FLEET, git

    shutil.copy(EXAMPLE_FLEET / "Pulumi.fleet.yaml", repo / "Pulumi.fleet.yaml")
    git(repo, "add", "Pulumi.fleet.yaml")
    git(repo, "commit", "-qm", "fleet")
    return repo


def test_a_fleet_rollback_targets_the_lowered_services_only(git_repo: Path, capsys) -> None:
    repo = fleet_repo(git_repo)
    path = repo / "Pulumi.fleet.yaml"
    path.write_text(path.read_text().replace("ascendWeight: 50", "ascendWeight: 0"))
    code = main(["-C", str(repo), "ci", "rollback-targets", "--stack", "fleet"])
    assert (code, capsys.readouterr().out.split()) == (
        0,
        [
            _fleet_urn(
                "dualstack:index:TrafficSplit$kubernetes:networking.istio.io/v1:VirtualService",
                "inference-chat-traffic-virtual-service",
            ),
            _fleet_urn(
                "dualstack:index:UnifiedMonitoring$kubernetes:monitoring.coreos.com/v1:"
                "PrometheusRule",
                "inference-chat-monitoring-rules",
            ),
        ],
    )


def test_the_deploy_moves_traffic_first_for_each_lowered_service(git_repo: Path, capsys) -> None:
    repo = fleet_repo(git_repo)
    deployed = '{"chat": {"ascendWeight": 80}, "embedder": {"ascendWeight": 20}}'
    argv = ["ci", "rollback-targets", "--stack", "fleet", "--deployed-services", deployed]
    assert main(["-C", str(repo), *argv]) == 0
    names = [urn.rsplit("::", 1)[1] for urn in capsys.readouterr().out.split()]
    assert names == ["inference-chat-traffic-virtual-service", "inference-chat-monitoring-rules"]
    raised = '{"chat": {"ascendWeight": 20}, "embedder": {"ascendWeight": 5}}'
    argv[-1] = raised  # the file raises both: nothing to move first
    assert main(["-C", str(repo), *argv]) == 0
    assert capsys.readouterr().out == ""


def test_one_weight_for_a_fleet_is_refused(git_repo: Path, capsys) -> None:
    repo = fleet_repo(git_repo)
    argv = ["ci", "rollback-targets", "--stack", "fleet", "--deployed-weight", "50"]
    assert main(["-C", str(repo), *argv]) == 2
    assert capsys.readouterr().err == (
        "error: stack fleet holds a fleet, but one weight was given: pass --deployed-services\n"
    )


def test_a_map_for_a_single_service_stack_is_refused(git_repo: Path, capsys) -> None:
    set_weight(git_repo, "prod", 20)
    deployed = '{"inference": {"ascendWeight": 50}, "chat": {"ascendWeight": 50}}'
    argv = ["ci", "rollback-targets", "--stack", "prod", "--deployed-services", deployed]
    assert main(["-C", str(git_repo), *argv]) == 2
    assert capsys.readouterr().err == (
        "error: stack prod holds one service, but a map of service weights was given: pass "
        "--deployed-weight\n"
    )


def converted(repo: Path, layout: str) -> None:
    """Write prod in the working tree as `layout` (a fixture stack file of the other layout)."""
    (repo / "Pulumi.prod.yaml").write_text(layout, encoding="utf-8")


def test_the_deploy_of_a_conversion_to_a_fleet_of_one_moves_nothing_first(git_repo, capsys):
    """Deployed as one service (`--deployed-weight`), merged as a fleet of one: its objects
    are new (the member's URNs), so the full `up` does the whole change, a decrease too."""
    from tests.dualstack.offline.test_redteam_fleet_of_one import fleet_of_one

    converted(git_repo, fleet_of_one(5, "chat"))
    argv = ["-C", str(git_repo), "ci", "rollback-targets", "--stack", "prod"]
    for deployed in ("5", "20"):
        assert main([*argv, "--deployed-weight", deployed]) == 0
        assert capsys.readouterr() == ("", "")


def test_the_deploy_of_a_conversion_back_to_one_service_moves_nothing_first(git_repo, capsys):
    from tests.dualstack.offline.test_redteam_fleet_of_one import single

    converted(git_repo, single(5))
    argv = ["-C", str(git_repo), "ci", "rollback-targets", "--stack", "prod"]
    deployed = '{"chat": {"ascendWeight": 20}}'
    assert main([*argv, "--deployed-services", deployed]) == 0
    assert capsys.readouterr() == ("", "")
