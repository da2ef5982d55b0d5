"""`services`: a fleet of inference services on the stack's two pools, each on its own rung."""

from __future__ import annotations

import pytest

from components.settings import SettingsError, load_fleet, load_settings
from tests.conftest import cfg, fixture_config

CHAT_NPU = "registry/chat:v2.0.0-npu"


def _fleet(**keys):
    services = {
        "chat": {"ascendWeight": 20, "ascend": {"image": CHAT_NPU}},
        "embedder": {"ascendWeight": 0, "capacity": {"totalReplicas": 2}},
    }
    return cfg(services=services, **keys)


def test_a_stack_without_services_is_a_fleet_of_one_named_after_its_service() -> None:
    fleet = load_fleet(fixture_config("prod"))
    assert fleet.names == ["inference-service"]
    assert fleet.declared is False
    single = fleet.member()
    assert (single.member, single.weight_key, single.ascend_weight) == (None, "ascendWeight", 5)
    assert single.nvidia.deployment_name == "inference-blue"
    assert load_settings(fixture_config("prod"), service="inference-service") == single


def test_members_get_their_own_names_weights_and_overrides_and_inherit_the_rest() -> None:
    fleet = load_fleet(_fleet(capacity={"totalReplicas": 3}, probes={"path": "/ready"}))
    chat, embedder = fleet.member("chat"), fleet.member("embedder")
    assert (chat.ascend_weight, embedder.ascend_weight) == (20, 0)
    assert (chat.capacity.total_replicas, embedder.capacity.total_replicas) == (3, 2)
    assert (chat.probes.path, embedder.probes.path) == ("/ready", "/ready")
    assert chat.ascend.image == CHAT_NPU
    assert embedder.ascend.image == "registry/inference-service:v1.2.3-npu"
    assert (chat.service.name, chat.nvidia.deployment_name, chat.ascend.deployment_name) == (
        "chat",
        "chat-blue",
        "chat-green",
    )
    assert (embedder.istio.virtual_service_name, embedder.istio.destination_rule_name) == (
        "embedder-vs",
        "embedder-dr",
    )
    assert chat.weight_key == "services.chat.ascendWeight"
    assert chat.ascend.pool == embedder.ascend.pool


def test_pulumi_config_set_path_stores_json_text_that_is_accepted() -> None:
    # `pulumi config set --path services.chat.ascendWeight 20` hands the program JSON text.
    config = cfg(services='{"chat": {"ascendWeight": 20}}')
    assert load_settings(config).ascend_weight == 20


def test_without_service_a_fleet_of_several_lists_them() -> None:
    with pytest.raises(SettingsError, match=r"holds 2 services \(chat, embedder\): pass --service"):
        load_settings(_fleet())
    with pytest.raises(SettingsError, match=r"--service 'rerank': no such service; .* chat, embed"):
        load_settings(_fleet(), service="rerank")


@pytest.mark.parametrize(
    ("member", "message"),
    [
        ({"ascendWeight": 5, "ladder": [0, 100]}, r"services\.m\.ladder = \[0, 100\]: the fleet "),
        ({"ascendWeight": 5, "ascend": {"pool": {"nodes": ["a-1"]}}}, r"services\.m\.ascend\.pool"),
        ({"ascendWeight": 5, "service": {"name": "x"}}, r"services\.m\.service\.name = 'x'"),
        ({"ascendWeight": 33}, r"services\.m\.ascendWeight = 33: not a ladder step"),
        ({}, r"services\.m\.ascendWeight: missing; .*--path services\.m\.ascendWeight"),
        ({"ascendWeight": 5, "capacty": {}}, r"services\.m\.capacty: unknown key .*capacity\?"),
    ],
)
def test_a_bad_member_names_its_full_key(member: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        load_fleet(cfg(services={"m": member}))


def test_stack_level_weight_names_and_evidence_are_refused_in_a_fleet() -> None:
    with pytest.raises(SettingsError) as caught:
        load_fleet(_fleet(ascendWeight="5", istio={"virtualServiceName": "vs"}))
    assert str(caught.value).splitlines() == [
        "dualstack-inference:ascendWeight = '5': with `services`, every service has its own; "
        "set services.<name>.ascendWeight instead",
        "dualstack-inference:istio.virtualServiceName = 'vs': with `services`, each service's "
        "objects are named after it; remove it",
    ]


def test_a_members_rung_its_route_and_the_fleets_pin_header() -> None:
    """The shadow rung is a member's own (`mirrorPercent` with its weight); the HTTPRoute is
    named after the member; the tester-pin header is one for the fleet."""
    services = {
        "chat": {"ascendWeight": 0, "mirrorPercent": 10},
        "embedder": {"ascendWeight": 20},
    }
    fleet = load_fleet(cfg(services=services, router="gateway-api"))
    rows = [(s.name, s.mirror_percent, s.gateway_api.route_name) for s in fleet]
    assert rows == [("chat", 10, "chat-route"), ("embedder", 0, "embedder-route")]
    with pytest.raises(SettingsError) as caught:
        load_fleet(_fleet(mirrorPercent="10", gatewayApi={"routeName": "r"}))
    assert str(caught.value).splitlines() == [
        "dualstack-inference:mirrorPercent = '10': with `services`, every service has its own; "
        "set services.<name>.mirrorPercent instead",
        "dualstack-inference:gatewayApi.routeName = 'r': with `services`, each service's "
        "objects are named after it; remove it",
    ]
    pinned = {"ascendWeight": 0, "testerPinning": {"header": "x-dualstack-a"}}
    with pytest.raises(SettingsError, match=r"services\.chat\.testerPinning = .*the fleet shares"):
        load_fleet(cfg(services={"chat": pinned}))


def test_a_bad_stack_level_key_is_named_once_at_the_stack_level() -> None:
    with pytest.raises(SettingsError) as caught:
        load_fleet(_fleet(capacity={"headroom": 9}))
    assert str(caught.value).startswith("dualstack-inference:capacity.headroom = 9: ")


@pytest.mark.parametrize("name", ["Chat", "9lives", "a" * 57])
def test_a_member_name_must_be_a_service_name(name: str) -> None:
    with pytest.raises(SettingsError, match=r"^dualstack-inference:services\.\S+ = .*service name"):
        load_fleet(cfg(services={name: {"ascendWeight": 0}}))


def test_two_members_whose_precision_check_names_clash_are_refused() -> None:
    long = "a" * 30
    services = {f"{long}x": {"ascendWeight": 0}, f"{long}y": {"ascendWeight": 0}}
    with pytest.raises(SettingsError, match=r"precision check 'a{30}-precision' is also service"):
        load_fleet(cfg(services=services))


def test_the_clash_check_uses_the_precision_checks_own_name() -> None:
    from components.precision import names as precision_names

    long = "a" * 30
    alone = load_fleet(cfg(services={f"{long}x": {"ascendWeight": 0}})).member()
    services = {f"{long}x": {"ascendWeight": 0}, f"{long}y": {"ascendWeight": 0}}
    with pytest.raises(SettingsError) as refused:
        load_fleet(cfg(services=services))
    assert f"precision check {precision_names(alone)['job']!r} is also" in str(refused.value)


def test_a_members_name_comes_from_services_and_is_no_config_key() -> None:
    chat = load_fleet(_fleet()).member("chat")
    assert (chat.member, chat.name, chat.weight_key) == (
        "chat",
        "chat",
        "services.chat.ascendWeight",
    )
    with pytest.raises(
        SettingsError, match=r"^dualstack-inference:services\.chat\.member: unknown"
    ):
        load_fleet(cfg(services={"chat": {"ascendWeight": 0, "member": "other"}}))
    with pytest.raises(SettingsError, match=r"^dualstack-inference:member: unknown key"):
        load_fleet(cfg(ascendWeight=0, member="chat"))
