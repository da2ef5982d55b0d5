"""The VirtualService URN for the emergency rollback, read from `pulumi stack export`."""

from __future__ import annotations

import io
import json

import pytest

from dualstack.cli import main
from dualstack.pulumi_state import StateError, kubernetes_urn, parse_export

PARENTS = "dualstack:index:DualStackInference$dualstack:index:TrafficSplit"
VS_URN = (
    f"urn:pulumi:prod::dualstack-inference::{PARENTS}$kubernetes:networking.istio.io/v1:"
    "VirtualService::inference-traffic-virtual-service"
)


def export(*resources: dict) -> dict:
    return {"version": 3, "deployment": {"manifest": {}, "resources": list(resources)}}


def res(urn: str, type_: str, **extra) -> dict:
    return {"urn": urn, "type": type_, "custom": True, **extra}


STACK_EXPORT = export(
    res("urn:pulumi:prod::dualstack-inference::pulumi:pulumi:Stack::x", "pulumi:pulumi:Stack"),
    res(VS_URN, "kubernetes:networking.istio.io/v1:VirtualService"),
    res(
        "urn:pulumi:prod::p::kubernetes:networking.istio.io/v1:DestinationRule::dr",
        "kubernetes:networking.istio.io/v1:DestinationRule",
    ),
)


def test_finds_the_virtual_service_urn() -> None:
    assert kubernetes_urn(STACK_EXPORT, "VirtualService") == VS_URN


def test_pending_deletion_of_the_old_api_version_is_ignored() -> None:
    old = res(
        VS_URN.replace("/v1:", "/v1beta1:"),
        "kubernetes:networking.istio.io/v1beta1:VirtualService",
        delete=True,
    )
    doc = export(*STACK_EXPORT["deployment"]["resources"], old)
    assert kubernetes_urn(doc, "VirtualService") == VS_URN


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (export(), "no VirtualService in the stack's state"),
        (
            export(
                res("a", "kubernetes:networking.istio.io/v1:VirtualService"),
                res("b", "kubernetes:networking.istio.io/v1beta1:VirtualService"),
            ),
            "2 resources of kind VirtualService: a, b",
        ),
        ({"version": 3}, "not a `pulumi stack export` document"),
        ([], "not a `pulumi stack export` document"),
    ],
)
def test_bad_exports_are_errors(doc, message) -> None:
    with pytest.raises(StateError, match=message):
        kubernetes_urn(doc, "VirtualService")


def test_cli_reads_stdin(monkeypatch, capsys) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(STACK_EXPORT)))
    assert main(["ci", "urn", "--kind", "VirtualService"]) == 0
    assert capsys.readouterr().out == VS_URN + "\n"
    monkeypatch.setattr("sys.stdin", io.StringIO("error: no stack named 'prod' found"))
    assert main(["ci", "urn"]) == 2
    assert capsys.readouterr().err.startswith("error: `pulumi stack export` output is not JSON")


def test_parse_export_round_trip() -> None:
    assert parse_export(json.dumps(STACK_EXPORT)) == STACK_EXPORT
