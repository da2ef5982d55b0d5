"""Pulumi mocks that record every registered resource: the mocked run of the program, the
oracle the offline render (`dualstack.offline.direct`) is checked against, and the tests'.

Facts (REFERENCE.md, pulumi 3.27x): every custom resource and every ComponentResource reaches
`new_resource` (`custom` is False for components); registration order is not deterministic;
inputs arrive camelCased with numbers as floats. `MockResourceArgs` carries no parent: the
monitor's request does (`RegisterResourceRequest.parent`, a URN), and `ParentNotingMonitor`
hands it over.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime.mocks import MockMonitor

from dualstack.offline.direct import Registered

__all__ = ["ParentNotingMonitor", "RecordingMocks", "Registered"]

STACK_TYPE = "pulumi:pulumi:Stack"


def parent_name(parent_urn: str) -> str | None:
    """The logical name in a parent URN (`urn:pulumi:<stack>::<project>::<types>::<name>`);
    None for no parent or the stack itself."""
    if not parent_urn or parent_urn.split("::")[2].endswith(STACK_TYPE):
        return None
    return parent_urn.rsplit("::", 1)[1]


@dataclass
class RecordingMocks(pulumi.runtime.Mocks):
    """Answers every registration with its own inputs and keeps a list of them.

    `stack_outputs` answers `StackReference`s: {stack name: {output: value}}.
    """

    resources: list[Registered] = field(default_factory=list)
    stack_outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    registering: threading.local = field(default_factory=threading.local, repr=False)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        if args.typ == "pulumi:pulumi:StackReference":
            return args.name, {"outputs": self.stack_outputs.get(args.name, {})}
        parent = getattr(self.registering, "parent", None)
        self.resources.append(
            Registered(args.typ, args.name, dict(args.inputs), bool(args.custom), parent)
        )
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list | None]:
        return {}, None

    def of_type(self, type_: str) -> list[Registered]:
        """The registered resources whose type token is `type_`."""
        return [r for r in self.resources if r.type_ == type_]


class ParentNotingMonitor(MockMonitor):
    """The SDK's mock monitor, telling `RecordingMocks` the parent of the resource it is
    registering (the same thread calls `new_resource` within `RegisterResource`)."""

    mocks: RecordingMocks

    def RegisterResource(self, request: Any) -> Any:
        self.mocks.registering.parent = parent_name(request.parent)
        try:
            return super().RegisterResource(request)
        finally:
            self.mocks.registering.parent = None
