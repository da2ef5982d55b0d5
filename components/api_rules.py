"""What the Kubernetes API server checks in the fields this program emits, as pure functions.

kubernetes-validate and the CRD schemas check structure (types, known fields); the API server
also checks the content of names, labels, quantities and numbers. Each rule here cites the
Kubernetes source it repeats (paths in github.com/kubernetes/kubernetes, staging included):

- names, label keys and values, DNS labels and subdomains:
  `staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go` (IsDNS1123Label,
  IsDNS1123Subdomain, IsDNS1035Label, IsQualifiedName, IsValidLabelValue, IsConfigMapKey,
  IsValidPortName, IsValidPortNum);
- labels and annotations of objects: `apimachinery/pkg/apis/meta/v1/validation/validation.go`
  (ValidateLabels) and `apimachinery/pkg/api/validation/objectmeta.go` (ValidateAnnotations,
  TotalAnnotationSizeLimitB = 256 KiB);
- quantities: `apimachinery/pkg/api/resource/quantity.go` (the grammar in its doc comment,
  `parseQuantityString`) and `suffix.go` (the suffixes);
- names by kind, resources, taints, tolerations, host paths, ports:
  `pkg/apis/core/validation/validation.go` (ValidateServiceName = DNS-1035 label,
  ValidateNodeName = DNS-1123 subdomain, ValidateNamespaceName = DNS-1123 label,
  ValidateResourceRequirements, validateContainerResourceName, IsExtendedResourceName in
  `pkg/apis/core/helper/helpers.go`, validateNodeTaints, validateTolerations,
  validateHostPathVolumeSource, validatePathNoBacksteps, ValidateConfigMap with
  `MaxSecretSize` = 1 MiB of data);
- Job and CronJob names: `pkg/apis/batch/validation/validation.go` (a Job's name becomes
  the `batch.kubernetes.io/job-name` label value, at most 63 characters; a CronJob's name at
  most 52, as it gets an 11-character suffix per Job);
- int32 fields (`replicas`, ports, probe and Job counters): the types in
  `staging/src/k8s.io/api/{core,apps,batch}/v1/types.go`;
- Istio hosts: `istio/istio pkg/config/validation/agent/validation.go` (ValidateWildcardDomain:
  at most 255 characters, a wildcard only as the first label, each label a DNS-1123 label).

Every checker returns an error message (what is allowed) or None; `object_errors(obj)` walks
one rendered object and returns `path: message` lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
JOB_NAME_MAX = 63
CRON_JOB_NAME_MAX = 52
HOSTNAME_MAX = 255
ANNOTATIONS_MAX_BYTES = 256 * 1024
CONFIG_MAP_MAX_BYTES = 1024 * 1024
INT32_MAX = 2**31 - 1
PORT_MAX = 65535

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_PORT_NAME = re.compile(r"[-a-z0-9]+")
_WILDCARD_LABEL = re.compile(r"\*|(\*|\*-)?[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?")
_HOST_LABEL = re.compile(r"[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?")

# quantity.go: <quantity> ::= <signedNumber><suffix>; <suffix> ::= <binarySI> |
# <decimalExponent> | <decimalSI>; suffix.go adds n and u to the decimal SI suffixes.
_QUANTITY = re.compile(
    r"(?P<number>[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
_BINARY_SI = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
"""Resources a container may request besides extended ones and `hugepages-<size>`
(validation.go validateContainerResourceName, helper.IsStandardContainerResourceName)."""

DNS1123_LABEL_RULE = (
    "not a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a "
    "letter or digit, 1 to 63 characters)"
)
DNS1123_SUBDOMAIN_RULE = (
    "not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', each part starting "
    "and ending with a letter or digit, at most 253 characters)"
)
DNS1035_LABEL_RULE = (
    "not a DNS-1035 label (lowercase letters, digits and '-', starting with a letter and "
    "ending with a letter or digit, 1 to 63 characters)"
)
QUALIFIED_NAME_RULE = (
    "not a qualified name (letters, digits, '-', '_' and '.', starting and ending with a "
    "letter or digit, at most 63 characters, with an optional DNS-subdomain prefix and '/', "
    "e.g. example.com/my-name)"
)
LABEL_VALUE_RULE = (
    "not a label value (empty, or letters, digits, '-', '_' and '.', starting and ending "
    "with a letter or digit, at most 63 characters)"
)
QUANTITY_RULE = (
    "not a Kubernetes quantity (a number with an optional suffix Ki, Mi, Gi, Ti, Pi, Ei, n, "
    "u, m, k, M, G, T, P, E or an exponent e<N>, e.g. 500m, 4, 32Gi)"
)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def dns1123_label(value: Any) -> str | None:
    """None when `value` is a DNS-1123 label (IsDNS1123Label), else what is allowed."""
    text = _text(value)
    if text is None or len(text) > DNS1123_LABEL_MAX or not _DNS1123_LABEL.fullmatch(text):
        return DNS1123_LABEL_RULE
    return None


def dns1123_subdomain(value: Any) -> str | None:
    """None when `value` is a DNS-1123 subdomain (IsDNS1123Subdomain): node, Deployment,
    ConfigMap, Job and custom-resource names; `ip-10-0-0-1.ec2.internal` is one."""
    text = _text(value)
    if text is None or len(text) > DNS1123_SUBDOMAIN_MAX or not _DNS1123_SUBDOMAIN.fullmatch(text):
        return DNS1123_SUBDOMAIN_RULE
    return None


def dns1035_label(value: Any) -> str | None:
    """None when `value` is a DNS-1035 label (IsDNS1035Label): Service names."""
    text = _text(value)
    if text is None or len(text) > DNS1123_LABEL_MAX or not _DNS1035_LABEL.fullmatch(text):
        return DNS1035_LABEL_RULE
    return None


def qualified_name(value: Any) -> str | None:
    """None when `value` is a qualified name (IsQualifiedName): label, annotation, taint and
    toleration keys, `[prefix/]name` with a DNS-subdomain prefix."""
    text = _text(value)
    if text is None:
        return QUALIFIED_NAME_RULE
    prefix, slash, name = text.rpartition("/")
    if slash and (not prefix or dns1123_subdomain(prefix) or "/" in prefix):
        return QUALIFIED_NAME_RULE
    if len(name) > QUALIFIED_NAME_MAX or not _QUALIFIED_NAME.fullmatch(name):
        return QUALIFIED_NAME_RULE
    return None


def label_value(value: Any) -> str | None:
    """None when `value` is a label value (IsValidLabelValue); the empty string is one."""
    text = _text(value)
    if text is None or len(text) > LABEL_VALUE_MAX:
        return LABEL_VALUE_RULE
    if text and not _QUALIFIED_NAME.fullmatch(text):
        return LABEL_VALUE_RULE
    return None


def label_errors(labels: Any) -> list[tuple[str, str]]:
    """[(key, message)] for each bad key or value of a label mapping (ValidateLabels)."""
    if not isinstance(labels, Mapping):
        return [("", "must be a mapping of label keys to values")]
    problems = []
    for key, value in labels.items():
        if why := qualified_name(key):
            problems.append((str(key), f"the key is {why}"))
        elif why := label_value(value):
            problems.append((str(key), f"the value {repr(value)[:80]} is {why}"))
    return problems


def parse_quantity(text: Any) -> Decimal:
    """The value of a Kubernetes quantity (`500m` -> 0.5, `32Gi` -> 34359738368).

    The grammar of quantity.go: an optionally signed decimal number (`4`, `0.5`, `.5`, `5.`)
    and at most one suffix: binary SI (Ki..Ei, powers of 1024), decimal SI (n u m "" k M G T
    P E, powers of 1000) or a decimal exponent (`e3`, `E-2`). `10XB`, `1K`, `1 Gi`, `1e3k`,
    `` and `abc` are not quantities. Raises ValueError saying what is allowed.
    """
    match = _QUANTITY.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(QUANTITY_RULE)
    try:
        number = Decimal(match["number"])
        suffix = match["suffix"] or ""
        if suffix in _BINARY_SI:
            return number * (Decimal(1024) ** _BINARY_SI[suffix])
        if len(suffix) > 1 and suffix[0] in "eE":
            return number.scaleb(int(suffix[1:]))
        return number.scaleb(_DECIMAL_SI.get(suffix, 0))
    except (InvalidOperation, ArithmeticError, ValueError):
        raise ValueError("is a quantity too large to represent") from None


def extended_resource_name(value: Any) -> str | None:
    """None when `value` is an extended resource name (IsExtendedResourceName): a qualified
    name with a domain prefix outside `kubernetes.io` (`nvidia.com/gpu`), not `requests.`."""
    text = _text(value)
    allowed = (
        "an extended resource name: <domain>/<name> with a domain outside kubernetes.io, "
        "e.g. nvidia.com/gpu or huawei.com/Ascend910"
    )
    if text is None or "/" not in text or "kubernetes.io/" in text:
        return f"must be {allowed}"
    if text.startswith("requests.") or qualified_name(f"requests.{text}"):
        return f"must be {allowed}"
    return None


def container_resource_name(value: Any) -> str | None:
    """None when a container may request `value`: cpu, memory, ephemeral-storage,
    hugepages-<size> or an extended resource (validateContainerResourceName)."""
    if value in STANDARD_CONTAINER_RESOURCES or (
        isinstance(value, str) and value.startswith("hugepages-")
    ):
        return None
    return extended_resource_name(value)


def is_integer_resource(name: str) -> bool:
    """Extended resources are counted in whole units (helper.IsIntegerResourceName)."""
    return name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-")


def resource_errors(resources: Any) -> list[tuple[str, str]]:
    """[(path under `resources`, message)] of a container's requests and limits
    (ValidateResourceRequirements): names, quantities >= 0, whole extended resources,
    requests <= limits, and extended resources with a request equal to their limit."""
    if not isinstance(resources, Mapping):
        return []
    problems: list[tuple[str, str]] = []
    values: dict[str, dict[str, Decimal]] = {}
    for part in ("requests", "limits"):
        values[part] = {}
        for name, quantity in (resources.get(part) or {}).items():
            path = f"{part}.{name}"
            if why := container_resource_name(name):
                problems.append((path, f"the resource name {why}"))
                continue
            try:
                amount = parse_quantity(quantity)
            except ValueError as exc:
                problems.append((path, str(exc)))
                continue
            if amount < 0:
                problems.append((path, "must be greater than or equal to 0"))
            elif is_integer_resource(name) and amount != amount.to_integral_value():
                problems.append((path, "must be a whole number (an extended resource)"))
            else:
                values[part][name] = amount
    for name, request in values["requests"].items():
        limit = values["limits"].get(name)
        if is_integer_resource(name) and limit is None:
            problems.append(
                (f"limits.{name}", "must be set (extended resources are not overcommitted)")
            )
        elif limit is not None and is_integer_resource(name) and request != limit:
            problems.append((f"requests.{name}", f"must be equal to the {name} limit"))
        elif limit is not None and request > limit:
            problems.append((f"requests.{name}", f"must be less than or equal to the {name} limit"))
    return problems


def absolute_path(value: Any) -> str | None:
    """None when `value` is an absolute path without `..` parts: hostPath volumes and the
    mount of the same path (validatePathNoBacksteps; the kubelet resolves host paths on the
    node, so a relative one names no stable place)."""
    text = _text(value)
    if text is None or not text.startswith("/"):
        return "must be an absolute path (starting with '/')"
    if ".." in text.split("/"):
        return "must not contain '..'"
    if "\x00" in text or "\n" in text:
        return "must not contain NUL or newline characters"
    return None


def int32(value: Any, minimum: int = 0, maximum: int = INT32_MAX) -> str | None:
    """None when `value` is an integer in minimum..maximum (an int32 field by default)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be a whole number in {minimum}..{maximum}"
    if not minimum <= value <= maximum:
        return f"must be in {minimum}..{maximum}"
    return None


def port_name(value: Any) -> str | None:
    """None when `value` is a port name (IsValidPortName, IANA_SVC_NAME): at most 15
    lowercase letters, digits and '-', at least one letter, no '--', no '-' at the ends."""
    text = _text(value)
    if (
        text is None
        or not 1 <= len(text) <= 15
        or not _PORT_NAME.fullmatch(text)
        or not re.search("[a-z]", text)
        or "--" in text
        or text.startswith("-")
        or text.endswith("-")
    ):
        return "must be at most 15 lowercase letters, digits and '-', with at least one letter"
    return None


def hostname(value: Any) -> str | None:
    """None when `value` is a host an Istio VirtualService may answer for: `*`, a short
    name or a domain, at most 255 characters, a wildcard only as the first label (`*`,
    `*.example.com`), every other label a DNS-1123 label (ValidateWildcardDomain)."""
    text = _text(value)
    allowed = (
        "must be a host name such as api.example.com or *.example.com (labels of letters, "
        "digits and '-', at most 63 characters each, 255 in all; '*' only as the first label)"
    )
    if not text or len(text) > HOSTNAME_MAX:
        return allowed
    first, _dot, rest = text.partition(".")
    if len(first) > DNS1123_LABEL_MAX or not _WILDCARD_LABEL.fullmatch(first):
        return allowed
    if _dot:
        labels = rest.split(".")
        if labels[-1] == "":  # a fully qualified name may end with '.'
            labels = labels[:-1]
        if not labels or any(
            len(label) > DNS1123_LABEL_MAX or not _HOST_LABEL.fullmatch(label) for label in labels
        ):
            return allowed
    return None


def gateway_name(value: Any) -> str | None:
    """None when `value` names an Istio Gateway: `mesh`, `<name>` or `<namespace>/<name>`,
    each a DNS-1123 label (istio validation.go validateGatewayNames)."""
    text = _text(value)
    if text == "mesh":
        return None
    namespace, slash, name = (text or "").rpartition("/")
    if not text or (slash and dns1123_label(namespace)) or dns1123_label(name):
        return (
            "must be <namespace>/<name> (or <name>, or mesh), each part lowercase letters, "
            "digits and '-'"
        )
    return None


NAME_RULES = {
    "Service": dns1035_label,
    "Namespace": dns1123_label,
}
"""metadata.name rules that differ from the default DNS-1123 subdomain, by kind."""


def name_error(kind: str, name: Any) -> str | None:
    """The metadata.name rule of `kind` (see NAME_RULES; Job and CronJob are also bounded)."""
    why = NAME_RULES.get(kind, dns1123_subdomain)(name)
    if why is None and kind == "Job" and len(name) > JOB_NAME_MAX:
        why = f"must be at most {JOB_NAME_MAX} characters (it becomes the pods' job-name label)"
    if why is None and kind == "CronJob" and len(name) > CRON_JOB_NAME_MAX:
        why = f"must be at most {CRON_JOB_NAME_MAX} characters (each Job adds 11)"
    return why


def _metadata(meta: Any, path: str, kind: str | None) -> list[str]:
    if not isinstance(meta, Mapping):
        return []
    problems = []
    if kind is not None:
        if why := name_error(kind, meta.get("name")):
            problems.append(f"{path}.name: {why}")
        if "namespace" in meta and (why := dns1123_label(meta["namespace"])):
            problems.append(f"{path}.namespace: {why}")
    for key, why in label_errors(meta.get("labels") or {}):
        problems.append(f"{path}.labels.{key}: {why}")
    annotations = meta.get("annotations") or {}
    for key in annotations:
        if why := qualified_name(str(key).lower()):
            problems.append(f"{path}.annotations.{key}: the key is {why}")
    size = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        problems.append(f"{path}.annotations: {size} bytes, more than {ANNOTATIONS_MAX_BYTES}")
    return problems


def _pod_spec(spec: Any, path: str) -> list[str]:
    if not isinstance(spec, Mapping):
        return []
    problems = []
    for key, why in label_errors(spec.get("nodeSelector") or {}):
        problems.append(f"{path}.nodeSelector.{key}: {why}")
    for i, toleration in enumerate(spec.get("tolerations") or []):
        if toleration.get("key") and (why := qualified_name(toleration["key"])):
            problems.append(f"{path}.tolerations[{i}].key: {why}")
        if toleration.get("operator") == "Equal" and (
            why := label_value(toleration.get("value", ""))
        ):
            problems.append(f"{path}.tolerations[{i}].value: {why}")
    for i, volume in enumerate(spec.get("volumes") or []):
        if why := dns1123_label(volume.get("name")):
            problems.append(f"{path}.volumes[{i}].name: {why}")
        if "hostPath" in volume and (why := absolute_path(volume["hostPath"].get("path"))):
            problems.append(f"{path}.volumes[{i}].hostPath.path: {why}")
    for i, container in enumerate(spec.get("containers") or []):
        problems += _container(container, f"{path}.containers[{i}]")
    return problems


def _container(container: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    if why := dns1123_label(container.get("name")):
        problems.append(f"{path}.name: {why}")
    for i, port in enumerate(container.get("ports") or []):
        if why := int32(port.get("containerPort"), 1, PORT_MAX):
            problems.append(f"{path}.ports[{i}].containerPort: {why}")
        if "name" in port and (why := port_name(port["name"])):
            problems.append(f"{path}.ports[{i}].name: {why}")
    for where, why in resource_errors(container.get("resources")):
        problems.append(f"{path}.resources.{where}: {why}")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        for field, value in (container.get(probe) or {}).items():
            if field.endswith(("Seconds", "Threshold")) and (why := int32(value)):
                problems.append(f"{path}.{probe}.{field}: {why}")
    for i, mount in enumerate(container.get("volumeMounts") or []):
        if why := absolute_path(mount.get("mountPath")):
            problems.append(f"{path}.volumeMounts[{i}].mountPath: {why}")
    return problems


def _template(template: Any, path: str) -> list[str]:
    if not isinstance(template, Mapping):
        return []
    return _metadata(template.get("metadata"), f"{path}.metadata", None) + _pod_spec(
        template.get("spec"), f"{path}.spec"
    )


def _job_spec(spec: Any, path: str) -> list[str]:
    if not isinstance(spec, Mapping):
        return []
    problems = _template(spec.get("template"), f"{path}.template")
    for field, minimum in (
        ("backoffLimit", 0),
        ("activeDeadlineSeconds", 1),
        ("ttlSecondsAfterFinished", 0),
    ):
        if field in spec and (why := int32(spec[field], minimum)):
            problems.append(f"{path}.{field}: {why}")
    return problems


def _spec_errors(kind: str, spec: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    if kind == "Deployment":
        if "replicas" in spec and (why := int32(spec["replicas"])):
            problems.append(f"spec.replicas: {why}")
        for key, why in label_errors((spec.get("selector") or {}).get("matchLabels") or {}):
            problems.append(f"spec.selector.matchLabels.{key}: {why}")
        problems += _template(spec.get("template"), "spec.template")
    elif kind == "Node":
        for i, taint in enumerate(spec.get("taints") or []):
            if why := qualified_name(taint.get("key")):
                problems.append(f"spec.taints[{i}].key: {why}")
            if why := label_value(taint.get("value", "")):
                problems.append(f"spec.taints[{i}].value: {why}")
    elif kind == "Service":
        for key, why in label_errors(spec.get("selector") or {}):
            problems.append(f"spec.selector.{key}: {why}")
        for i, port in enumerate(spec.get("ports") or []):
            if why := int32(port.get("port"), 1, PORT_MAX):
                problems.append(f"spec.ports[{i}].port: {why}")
    elif kind == "PodDisruptionBudget":
        for key, why in label_errors((spec.get("selector") or {}).get("matchLabels") or {}):
            problems.append(f"spec.selector.matchLabels.{key}: {why}")
    elif kind == "Job":
        problems += _job_spec(spec, "spec")
    elif kind == "CronJob":
        job = spec.get("jobTemplate") or {}
        problems += _metadata(job.get("metadata"), "spec.jobTemplate.metadata", None)
        problems += _job_spec(job.get("spec"), "spec.jobTemplate.spec")
    elif kind == "VirtualService":
        for i, host in enumerate(spec.get("hosts") or []):
            if why := hostname(host):
                problems.append(f"spec.hosts[{i}]: {why}")
        for i, gateway in enumerate(spec.get("gateways") or []):
            if why := gateway_name(gateway):
                problems.append(f"spec.gateways[{i}]: {why}")
        for i, route in enumerate(spec.get("http") or []):
            for j, destination in enumerate(route.get("route") or []):
                if "weight" in destination and (why := int32(destination["weight"], 0, 100)):
                    problems.append(f"spec.http[{i}].route[{j}].weight: {why}")
    elif kind == "DestinationRule":
        for i, subset in enumerate(spec.get("subsets") or []):
            for key, why in label_errors(subset.get("labels") or {}):
                problems.append(f"spec.subsets[{i}].labels.{key}: {why}")
    return problems


def _config_map(obj: Mapping[str, Any]) -> list[str]:
    problems = []
    data = obj.get("data") or {}
    for key in data:
        if len(key) > DNS1123_SUBDOMAIN_MAX or not _CONFIG_MAP_KEY.fullmatch(key):
            problems.append(f"data.{key}: key must be letters, digits, '-', '_' or '.'")
    size = sum(len(str(v).encode()) for v in data.values())
    if size > CONFIG_MAP_MAX_BYTES:
        problems.append(f"data: {size} bytes, more than the {CONFIG_MAP_MAX_BYTES} allowed")
    return problems


def object_errors(obj: Mapping[str, Any]) -> list[str]:
    """What the API server would refuse in one rendered object, as `path: message` lines
    (`spec.replicas: must be in 0..2147483647`); [] when it would accept it."""
    kind = str(obj.get("kind", ""))
    problems = _metadata(obj.get("metadata"), "metadata", kind)
    spec = obj.get("spec")
    if isinstance(spec, Mapping):
        problems += _spec_errors(kind, spec)
    if kind == "ConfigMap":
        problems += _config_map(obj)
    return problems


def objects_errors(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """`Kind/name: path: message` for every problem of every object."""
    lines = []
    for obj in objects:
        name = f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
        lines += [f"{name}: {problem}" for problem in object_errors(obj)]
    return lines
