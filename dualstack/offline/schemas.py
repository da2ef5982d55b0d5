"""Schema validation of rendered objects, offline.

- Core Kubernetes kinds: `kubernetes-validate`'s strict schemas (the official OpenAPI
  schemas; strict rejects misspelt fields), one validator per kind built once per process
  (`core_validator`), judging as `kubernetes_validate.validate(strict=True)` does;
- what the API server checks beyond the schemas (names by kind, labels, quantities, int32
  ranges, requests <= limits, host paths, hosts): `components.api_rules`;
- Istio, Gateway API (HTTPRoute) and prometheus-operator CRDs: the official CRD JSON schemas
  vendored in `dualstack/offline/crd_schemas/` (datreeio/CRDs-catalog; provenance in its
  README), checked with jsonschema's Draft7Validator after the same `nullable` /
  preserve-unknown-fields adaptation as `shared/schemas/validate_crd.py`; an HTTPRoute also
  against the CEL rules of its CRD that a render could break (`gateway_rules`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator
from jsonschema.exceptions import best_match

from components import api_rules
from dualstack.offline.gateway_rules import http_route_problems

CRD_SCHEMAS = Path(__file__).with_name("crd_schemas")
KUBERNETES_VERSION = "1.32"
"""Kubernetes API version the core objects are checked against (kubectl 1.32 here)."""


class SchemaError(ValueError):
    """One or more rendered objects do not match their schema; one line per object."""


def _adapt(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _adapt(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("nullable") is True and isinstance(node.get("type"), str):
        node["type"] = [node["type"], "null"]
    if node.get("x-kubernetes-preserve-unknown-fields") is True:
        node.pop("additionalProperties", None)
    for value in node.values():
        _adapt(value)


@cache
def crd_validator(api_version: str, kind: str) -> Draft7Validator | None:
    """Validator for a CRD kind at an apiVersion; None when the group is not vendored."""
    group, _, version = api_version.rpartition("/")
    folder = CRD_SCHEMAS / group
    if not group or not folder.is_dir():
        return None
    path = folder / f"{kind.lower()}_{version}.json"
    if not path.is_file():
        raise SchemaError(f"{kind} at {api_version}: no schema for this version in {folder}")
    schema = copy.deepcopy(json.loads(path.read_text(encoding="utf-8")))
    _adapt(schema)
    return Draft7Validator(schema)


def is_core(obj: Mapping[str, Any]) -> bool:
    """True for built-in kinds (core, apps, policy, batch, ...): groups without a dot, or
    ending in `.k8s.io` unless a CRD schema is vendored for the group
    (`gateway.networking.k8s.io` is a CRD, not built in)."""
    group = obj.get("apiVersion", "").rpartition("/")[0]
    if group and (CRD_SCHEMAS / group).is_dir():
        return False
    return "." not in group or group.endswith(".k8s.io")


def _unsupported(k8s_version: str) -> str:
    from importlib.metadata import version

    return (
        f"kubernetes-validate {version('kubernetes-validate')} has no schemas for Kubernetes "
        f"{k8s_version}: install kubernetes-validate>=1.32 (`make venv` installs the locked one)"
    )


@cache
def _schema_folder(k8s_version: str) -> str:
    """kubernetes-validate's strict schema folder for `k8s_version`, chosen as its
    `validate()` chooses it: the newest schemas not newer than the version asked for.

    Raises SchemaError when the installed kubernetes-validate has none that new."""
    from kubernetes_validate import utils

    wanted = utils.major_minor(k8s_version.removeprefix("v"))
    if wanted > utils.latest_version():
        raise SchemaError(_unsupported(k8s_version))
    version = [v for v in utils.all_versions() if utils.major_minor(v) <= wanted][-1]
    return f"kubernetes-json-schema/v{version}-local-strict"


@cache
def _definitions(folder: str, k8s_version: str) -> Any:
    from kubernetes_validate import utils

    definitions = utils.schema_contents(f"{folder}/_definitions.json", k8s_version)
    return utils.Resource.from_contents(definitions)


DEFINITIONS_REF = "/api/_definitions.json#/$defs/"
"""How kubernetes-validate's kind schemas point into `_definitions.json` (whose definitions
point at each other as `#/$defs/<name>`)."""
_LOCAL_REF = "#/$defs/"
_ANNOTATIONS = ("description", "x-kubernetes-")


def inline_definitions(node: Any, definitions: Mapping[str, Any], _open: tuple = ()) -> Any:
    """`node` with every reference to a definition (`DEFINITIONS_REF` + name from a kind's
    schema, `#/$defs/` + name inside the definitions), beside annotations only (`description`,
    `x-kubernetes-*`), replaced by that definition, itself inlined, so a validation follows no
    reference. A definition that contains itself keeps a `$ref`, spelt `DEFINITIONS_REF` + name
    so that the registry still resolves it from the kind's schema. A `$ref` beside annotations
    validates exactly as its target does (JSON Schema 2020-12: `$ref` applies the target
    beside its siblings, which here assert nothing), so the schema judges alike, error for
    error."""
    if isinstance(node, list):
        return [inline_definitions(item, definitions, _open) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith((DEFINITIONS_REF, _LOCAL_REF)):
        name = ref.removeprefix(DEFINITIONS_REF).removeprefix(_LOCAL_REF)
        only_annotations = all(key == "$ref" or key.startswith(_ANNOTATIONS) for key in node)
        if only_annotations and name in definitions and name not in _open:
            return inline_definitions(definitions[name], definitions, (*_open, name))
        node = {**node, "$ref": DEFINITIONS_REF + name}
    return {key: inline_definitions(value, definitions, _open) for key, value in node.items()}


@cache
def core_validator(api_version: str, kind: str, k8s_version: str = KUBERNETES_VERSION) -> Any:
    """The strict validator of one built-in kind at one apiVersion, built once per process:
    the schema files, registry and validator class kubernetes-validate 1.3x builds anew for
    every object it checks (`kubernetes_validate.validate(obj, version, strict=True)`:
    `<kind>-<group>-<version>.json` and `_definitions.json` of its `-local-strict` folder, a
    Draft 2020-12 validator), with the definitions inlined (`inline_definitions`: no reference
    to follow per object), so an object fails here exactly when it fails there, with the same
    first error.

    Raises SchemaError for a Kubernetes version the installed schemas lack, and
    kubernetes_validate's SchemaNotFoundError for a kind it has no schema of.
    """
    from jsonschema.validators import Draft202012Validator
    from kubernetes_validate import utils  # its Registry and Resource: the `referencing` it uses

    folder = _schema_folder(k8s_version)
    # `apps/v1` -> `apps-v1`, `networking.k8s.io/v1` -> `networking-v1`, `v1` -> `v1`.
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = utils.schema_contents(f"{folder}/{kind.lower()}-{group_version}.json", k8s_version)
    except FileNotFoundError:
        raise utils.SchemaNotFoundError(
            version=utils.major_minor(k8s_version), kind=kind, api_version=api_version
        ) from None
    definitions = _definitions(folder, k8s_version)
    registry = definitions @ (utils.Resource.from_contents(schema) @ utils.Registry())
    inlined = inline_definitions(schema, definitions.contents.get("$defs", {}))
    return Draft202012Validator(inlined, registry=registry)


def object_errors(obj: Mapping[str, Any], k8s_version: str = KUBERNETES_VERSION) -> list[str]:
    """Schema errors of one object as `path: message` strings; [] when it is valid."""
    if is_core(obj):
        validator = core_validator(str(obj.get("apiVersion")), str(obj.get("kind")), k8s_version)
        error = next(iter(validator.iter_errors(dict(obj))), None)  # kubernetes-validate's first
        if error is None:
            return []
        path = ".".join(str(p) for p in error.path) or "(root)"
        return [f"{path}: {error.message}"]
    validator = crd_validator(obj.get("apiVersion", ""), obj.get("kind", ""))
    if validator is None:
        return []
    error = best_match(validator.iter_errors(dict(obj)))
    if error is None:
        return http_route_problems(obj) if obj.get("kind") == "HTTPRoute" else []
    path = ".".join(str(p) for p in error.absolute_path) or "(root)"
    return [f"{path}: {error.message}"]


def validate_objects(
    objects: Iterable[Mapping[str, Any]], k8s_version: str = KUBERNETES_VERSION
) -> None:
    """Check every object against its schema and, when the schema passes, against what the
    API server checks beyond it (`components.api_rules`: names by kind, labels, quantities,
    int32 ranges, requests <= limits, host paths, hosts). Raises SchemaError listing
    `Kind/name: path: message` lines."""
    problems = []
    for obj in objects:
        name = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        errors = object_errors(obj, k8s_version) or api_rules.object_errors(obj)
        problems += [f"{name}: {error}" for error in errors]
    if problems:
        raise SchemaError("\n".join(problems))
