"""Which Service an HTTPRoute backendRef names (`policies.routers.gateway_api.backend_host`):
the host every policy then matches against the stack's Services. Gateway API: a backendRef's
`group` defaults to the core group (`""`), its `kind` to `Service`, its `namespace` to the
route's."""

from __future__ import annotations

import pytest

from policies.routers.gateway_api import backend_host


@pytest.mark.parametrize(
    ("ref", "host"),
    [
        ({"name": "inference-green"}, "inference-green.inference.svc.cluster.local"),
        (
            {"name": "inference-green", "namespace": "serving"},
            "inference-green.serving.svc.cluster.local",
        ),
        (
            {"name": "inference-green", "group": "core", "kind": "Service"},
            "inference-green.inference.svc.cluster.local",
        ),
        (
            {"name": "inference-green", "group": None, "kind": None, "namespace": None},
            "inference-green.inference.svc.cluster.local",
        ),
        ({}, ".inference.svc.cluster.local"),
    ],
)
def test_a_service_backend_is_its_fqdn(ref, host):
    assert backend_host(ref, "inference") == host


@pytest.mark.parametrize(
    ("ref", "host"),
    [
        (
            {"name": "green", "group": "multicluster.x-k8s.io", "kind": "ServiceImport"},
            "multicluster.x-k8s.io/ServiceImport green",
        ),
        ({"name": "green", "group": "example.com"}, "example.com/Service green"),
        ({"name": "green", "kind": "Pod"}, "core/Pod green"),
        ({"name": "green", "group": "core", "kind": "Pod"}, "core/Pod green"),
        ({"kind": "Pod"}, "core/Pod "),
    ],
)
def test_another_backend_kind_is_named_so_that_no_service_matches(ref, host):
    assert backend_host(ref, "inference") == host
