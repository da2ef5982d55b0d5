"""The API server's rules for the fields the program emits (components/api_rules.py).

Expected values are the Kubernetes documentation's own examples and limits (quantity.go's
grammar, validation.go's lengths), not values computed by the code under test.
"""

from __future__ import annotations

import copy
import re
from decimal import Decimal

import pytest

from components import api_rules
from components.settings.scalars import parse_bool, parse_int, parse_number, shown
from dualstack.offline.schemas import SchemaError, validate_objects
from tests.conftest import cfg, find


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Decimal("0.5")),
        ("4", Decimal(4)),
        ("32Gi", Decimal(32 * 2**30)),
        ("1Ki", Decimal(1024)),
        ("1k", Decimal(1000)),
        ("1M", Decimal(10**6)),
        ("1E", Decimal(10**18)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("+1", Decimal(1)),
        ("-1", Decimal(-1)),
        ("100n", Decimal("0.0000001")),
        ("2u", Decimal("0.000002")),
        ("0", Decimal(0)),
    ],
)
def test_quantities_of_the_kubernetes_grammar_parse(text: str, value: Decimal) -> None:
    assert api_rules.parse_quantity(text) == value


@pytest.mark.parametrize(
    "text", ["", "abc", "10XB", "1K", "1 Gi", "1e3k", "Gi", ".", "1.2.3", "1e", "1i", "0x10", 4]
)
def test_what_is_not_a_quantity(text: object) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        api_rules.parse_quantity(text)


@pytest.mark.parametrize(
    ("check", "good", "bad"),
    [
        (
            api_rules.dns1123_label,
            ["a", "a-1", "1a", "a" * 63],
            ["A", "a_b", "-a", "a-", "a" * 64, ""],
        ),
        (
            api_rules.dns1123_subdomain,
            ["ip-10-0-0-1.ec2.internal", "a.b", "a" * 253],
            ["a..b", ".a", "a.", "A.b", "a" * 254, "a_b.c"],
        ),
        (api_rules.dns1035_label, ["svc", "s-1"], ["1svc", "Svc", "s" * 64, "s-"]),
        (
            api_rules.qualified_name,
            ["app", "nvidia.com/gpu", "Ab_c.d-1", "a" * 63, f"{'p' * 200}/n"],
            ["bad key!", "a/b/c", "/a", "a/", "-a", "a" * 64, "A.com/x", ""],
        ),
        (api_rules.label_value, ["", "v", "A_b.c-1", "v" * 63], ["bad value!", "-v", "v" * 64]),
        (
            api_rules.extended_resource_name,
            ["nvidia.com/gpu", "huawei.com/Ascend910"],
            ["gpu", "nvidia gpu", "kubernetes.io/gpu", "nvidia.com/", "requests.x.com/y"],
        ),
        (api_rules.absolute_path, ["/usr/local/Ascend/driver", "/"], ["usr/x", "", "/a/../b"]),
        (
            api_rules.hostname,
            ["api.example.com", "*.example.com", "*", "inference-service", "a.b.", "API.x.com"],
            ["bad host!", "*.*.x.com", "a..b", "", f"{'h' * 64}.com", "x." * 130],
        ),
        (api_rules.gateway_name, ["mesh", "gw", "istio-system/gw"], ["ns/Bad", "a/b/c", "ns/", ""]),
        (api_rules.port_name, ["http", "grpc-web"], ["HTTP", "8080", "a--b", "x" * 16]),
    ],
)
def test_name_rules(check, good: list[str], bad: list[str]) -> None:
    assert [check(value) for value in good] == [None] * len(good)
    assert all(check(value) for value in bad), [v for v in bad if not check(v)]


def test_resource_rules_follow_validate_resource_requirements() -> None:
    good = {
        "requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"},
        "limits": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
    }
    assert api_rules.resource_errors(good) == []
    bad = {
        "requests": {"cpu": "9", "memory": "-1", "nvidia.com/gpu": "2", "x": "1", "a.com/b": "1.5"},
        "limits": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
    }
    assert dict(api_rules.resource_errors(bad)) == {
        "requests.cpu": "must be less than or equal to the cpu limit",
        "requests.memory": "must be greater than or equal to 0",
        "requests.nvidia.com/gpu": "must be equal to the nvidia.com/gpu limit",
        "requests.x": "the resource name must be an extended resource name: <domain>/<name> "
        "with a domain outside kubernetes.io, e.g. nvidia.com/gpu or huawei.com/Ascend910",
        "requests.a.com/b": "must be a whole number (an extended resource)",
    }


def test_int32_and_names_by_kind() -> None:
    assert api_rules.int32(2**31 - 1) is None
    assert api_rules.int32(2**31) == "must be in 0..2147483647"
    assert api_rules.int32(True) == "must be a whole number in 0..2147483647"
    assert api_rules.name_error("Service", "1svc")
    assert api_rules.name_error("Deployment", "a.b") is None
    assert api_rules.name_error("Node", "ip-10-0-0-1.ec2.internal") is None
    assert api_rules.name_error("Job", "j" * 64) == (
        "must be at most 63 characters (it becomes the pods' job-name label)"
    )
    assert (
        api_rules.name_error("CronJob", "c" * 53)
        == "must be at most 52 characters (each Job adds 11)"
    )


@pytest.fixture
def rendered(render_objects) -> list[dict]:
    return render_objects(cfg(ascendWeight="20"))


@pytest.mark.parametrize(
    ("kind", "name", "edit", "line"),
    [
        (
            "Deployment",
            "inference-blue",
            lambda o: o["spec"].update(replicas=2**31),
            "Deployment/inference-blue: spec.replicas: must be in 0..2147483647",
        ),
        (
            "Service",
            "inference-service",
            lambda o: o["metadata"].update(name="s" * 64),
            "Service/" + "s" * 64 + ": metadata.name: not a DNS-1035 label",
        ),
        (
            "Deployment",
            "inference-green",
            lambda o: o["spec"]["template"]["spec"]["containers"][0]["resources"][
                "requests"
            ].update(cpu="abc"),
            "Deployment/inference-green: spec.template.spec.containers[0].resources.requests.cpu: "
            "not a Kubernetes quantity",
        ),
        (
            "Deployment",
            "inference-green",
            lambda o: next(v for v in o["spec"]["template"]["spec"]["volumes"] if "hostPath" in v)[
                "hostPath"
            ].update(path="x/y"),
            "Deployment/inference-green: spec.template.spec.volumes[*].hostPath.path: must be an "
            "absolute path",
        ),
        (
            "Node",
            "ascend-01",
            lambda o: o["metadata"]["labels"].update({"bad key!": "x"}),
            "Node/ascend-01: metadata.labels.bad key!: the key is not a qualified name",
        ),
        (
            "VirtualService",
            "inference-vs",
            lambda o: o["spec"]["hosts"].append("bad host!"),
            "VirtualService/inference-vs: spec.hosts[1]: must be a host name",
        ),
        (
            "Deployment",
            "inference-green",
            lambda o: o["metadata"].update(annotations={"bad key!": "x"}),
            "Deployment/inference-green: metadata.annotations.bad key!: the key is not a "
            "qualified name",
        ),
    ],
)
def test_validate_objects_refuses_what_the_api_server_would(
    rendered: list[dict], kind: str, name: str, edit, line: str
) -> None:
    objects = copy.deepcopy(rendered)
    edit(find(objects, kind, name))
    with pytest.raises(SchemaError) as caught:
        validate_objects(objects)
    message = re.sub(r"volumes\[\d+\]", "volumes[*]", str(caught.value))
    assert message.startswith(line), message


def test_the_default_render_passes_every_rule(rendered: list[dict]) -> None:
    assert api_rules.objects_errors(rendered) == []
    validate_objects(rendered)


def test_dotted_node_names_render(render_objects) -> None:
    """EKS names nodes like ip-10-0-0-1.ec2.internal: a DNS-1123 subdomain, valid."""
    objects = render_objects(
        cfg(
            ascendWeight="20",
            ascend={"pool": {"nodes": ["ip-10-0-0-1.ec2.internal", "ip-10-0-0-2.ec2.internal"]}},
        )
    )
    node = find(objects, "Node", "ip-10-0-0-1.ec2.internal")
    assert node["metadata"]["labels"]["pool"] == "ascend"
    assert node["spec"]["taints"][0] == {"key": "pool", "value": "ascend", "effect": "NoSchedule"}
    validate_objects(objects)


@pytest.mark.parametrize(
    ("value", "parsed"), [(20, 20), ("20", 20), ("-1", -1), ("0", 0), (2**40, 2**40)]
)
def test_integers_under_the_strict_rule(value: object, parsed: int) -> None:
    assert parse_int(value) == parsed


@pytest.mark.parametrize(
    "value", [True, False, 20.0, "020", "+20", " 20 ", "2_0", "2e1", "", "0x14", "\u0662", None]
)
def test_what_is_not_an_integer(value: object) -> None:
    with pytest.raises(ValueError, match="expected a whole number"):
        parse_int(value)


@pytest.mark.parametrize("value", [True, float("nan"), float("inf"), "nan", "1e3", "+1", "1,2"])
def test_what_is_not_a_number(value: object) -> None:
    with pytest.raises(ValueError, match="expected a"):
        parse_number(value)


def test_numbers_and_booleans() -> None:
    assert [parse_number(v) for v in (1.5, 2, "1.2", "-0.5")] == [1.5, 2, 1.2, -0.5]
    assert parse_bool(True) is True and parse_bool(False) is False
    for value in ("true", 1, 0, "yes", None):
        with pytest.raises(ValueError, match="expected true or false"):
            parse_bool(value)


def test_shown_cuts_long_values() -> None:
    assert shown("abc") == "'abc'"
    text = shown("x" * 5000)
    assert text == "'" + "x" * 199 + "… (5000 characters)"
