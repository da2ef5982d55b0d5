"""Pulumi mocks that record every registered resource, for the offline render and the tests.

Facts (REFERENCE.md, pulumi 3.27x): every custom resource and every ComponentResource reaches
`new_resource` (`custom` is False for components); registration order is not deterministic;
inputs arrive camelCased with numbers as floats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi


@dataclass(frozen=True)
class Registered:
    """One resource the program registered: Pulumi type token, logical name, inputs."""

    type_: str
    name: str
    inputs: dict[str, Any]
    custom: bool


@dataclass
class RecordingMocks(pulumi.runtime.Mocks):
    """Answers every registration with its own inputs and keeps a list of them.

    `stack_outputs` answers `StackReference`s: {stack name: {output: value}}.
    """

    resources: list[Registered] = field(default_factory=list)
    stack_outputs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        if args.typ == "pulumi:pulumi:StackReference":
            return args.name, {"outputs": self.stack_outputs.get(args.name, {})}
        self.resources.append(Registered(args.typ, args.name, dict(args.inputs), bool(args.custom)))
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list | None]:
        return {}, None

    def of_type(self, type_: str) -> list[Registered]:
        """The registered resources whose type token is `type_`."""
        return [r for r in self.resources if r.type_ == type_]
