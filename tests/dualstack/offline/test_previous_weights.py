"""One shape inside: a stack is a fleet (`Fleet.of`, `only`, `weights`), and the judge turns
the protocol's `previousWeight` (one number, a map, null) into {service: weight} in one place,
so the pack config of a fleet of one is the single-service config it always was."""

from __future__ import annotations

import pytest

from components.settings import Fleet, load_fleet, load_settings
from dualstack.offline.judge import previous_weights, wire_previous
from dualstack.offline.policy_config import pack_config
from dualstack.offline.protocol import BASE_WEIGHT, JudgeError
from tests.conftest import cfg, fleet_config

SINGLE = load_fleet(cfg(ascendWeight="20"))
FLEET = load_fleet(fleet_config())  # chat 50, embedder 20, reranker 0


def test_a_single_service_is_a_fleet_of_one() -> None:
    settings = load_settings(cfg(ascendWeight="20"))
    assert Fleet.of(settings) == SINGLE
    assert (SINGLE.declared, SINGLE.weights) == (False, {settings.name: 20})
    assert FLEET.weights == {"chat": 50, "embedder": 20, "reranker": 0}
    part = FLEET.only(["reranker", "chat"])
    assert (part.names, part.declared) == (["reranker", "chat"], True)
    assert Fleet.of(*part) == part


@pytest.mark.parametrize(
    ("wire", "judged", "base", "weights"),
    [
        (20, SINGLE, SINGLE, {SINGLE.first.name: 20}),
        (None, SINGLE, None, {}),  # a first deploy
        ({"chat": 5, "embedder": None}, FLEET, FLEET, {"chat": 5, "embedder": None}),
        (None, FLEET, FLEET, {}),
        (20, FLEET, SINGLE, {SINGLE.first.name: 20}),  # the base's one service, by its name
        (20, FLEET, None, {}),  # one number says nothing of the members of a new fleet
        (20, SINGLE, None, {SINGLE.first.name: 20}),
        (FLEET.weights, SINGLE, FLEET, FLEET.weights),  # a fleet folded back into one service
        ({"x": 5}, SINGLE, SINGLE, {}),  # a map for one service: nothing known
    ],
)
def test_previous_weight_of_the_protocol_becomes_a_map(wire, judged, base, weights) -> None:
    assert previous_weights(wire, judged, base) == weights


def test_the_base_answers_its_own_weights_in_the_protocols_shape() -> None:
    assert wire_previous(SINGLE, BASE_WEIGHT) == 20
    assert wire_previous(FLEET, BASE_WEIGHT) == {"chat": 50, "embedder": 20, "reranker": 0}
    assert wire_previous(None, BASE_WEIGHT) is None
    assert wire_previous(SINGLE, 5) == 5
    with pytest.raises(JudgeError, match="previousWeight 5 is one number"):
        wire_previous(FLEET, 5)


def test_a_fleet_of_one_gets_the_single_service_pack_config() -> None:
    config = pack_config(SINGLE, {"renamed-service": 5}, SINGLE, envelope=())
    assert config["no-unsafe-weight-jump"]["previousWeight"] == 5  # whatever its name
    assert "services" not in config["no-unsafe-weight-jump"]
    first = pack_config(SINGLE, {}, None, envelope=())
    assert "previousWeight" not in first["no-unsafe-weight-jump"]
    fleet = pack_config(FLEET, {"chat": 50}, FLEET, envelope=())["no-unsafe-weight-jump"]
    assert fleet["services"]["chat"]["previousWeight"] == 50
    assert "previousWeight" not in fleet["services"]["embedder"]
