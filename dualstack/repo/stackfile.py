"""Read and edit `Pulumi.<stack>.yaml` the way `pulumi config` does, keeping comments.

Stack files hold `config: {"<project>:<key>": value}`; `pulumi config set ascendWeight 20`
stores the string "20", structured keys are YAML mappings. Reads go through ruamel.yaml in
round-trip mode, so an edit changes the one line it must and keeps comments and layout.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from components.settings import PROJECT
from dualstack.repo.git import GitError, show_file


class StackFileError(RuntimeError):
    """A stack file is missing, unreadable or not a Pulumi stack file."""


def stack_path(root: Path, stack: str) -> Path:
    """`<root>/Pulumi.<stack>.yaml`."""
    return Path(root) / f"Pulumi.{stack}.yaml"


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    return yaml


def _yaml_problem(exc: Exception) -> str:
    """`line 4, column 3: mapping values are not allowed here` from a ruamel error."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return problem
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def _plain(value: Any) -> Any:
    """ruamel's round-trip containers -> plain dict/list/str/int."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def parse_config(text: str, origin: str) -> dict[str, Any]:
    """The `config:` mapping of a stack file's text; {} when the file has none.

    Raises StackFileError naming `origin` when the YAML is malformed or not a mapping.
    """
    try:
        document = _yaml().load(text)
    except Exception as exc:  # ruamel raises several unrelated error types
        raise StackFileError(f"{origin}: not valid YAML: {_yaml_problem(exc)}") from None
    if document is None:
        return {}
    if not isinstance(document, dict) or not isinstance(document.get("config", {}), dict):
        raise StackFileError(f"{origin}: expected a mapping with a `config:` mapping")
    return _plain(document.get("config") or {})


def read_config(root: Path, stack: str) -> dict[str, Any]:
    """The config of `Pulumi.<stack>.yaml` in `root`. Raises StackFileError if missing."""
    path = stack_path(root, stack)
    if not path.is_file():
        known = sorted(
            p.name[len("Pulumi.") : -len(".yaml")] for p in Path(root).glob("Pulumi.*.yaml")
        )
        raise StackFileError(
            f"no stack file {path.name} in {root}; stacks here: {', '.join(known) or 'none'}"
        )
    return parse_config(path.read_text(encoding="utf-8"), path.name)


def read_config_at(root: Path, stack: str, ref: str) -> dict[str, Any] | None:
    """The config of the stack at git `ref`; None when the stack file did not exist there.

    Raises StackFileError when `ref` is not a commit of the repository at `root` or git
    fails (through the one git runner, `dualstack.repo.git`, with its timeout).
    """
    name = stack_path(Path(), stack).name
    try:
        text = show_file(root, ref, f"./{name}")
    except GitError as exc:
        if "is not a commit" in str(exc):
            raise StackFileError(f"git ref {ref!r} is not a commit in {root}") from None
        raise StackFileError(f"{ref}:{name}: {exc}") from None
    if text is None:
        return None
    return parse_config(text, f"{ref}:{name}")


def set_config_value(root: Path, stack: str, key: str, value: Any, project: str = PROJECT) -> str:
    """Set `<project>:<key>` in `Pulumi.<stack>.yaml` as `pulumi config set` would (a string
    for scalars), keeping every other line, comment and quote as it was.

    Returns the previous value as text ("" when unset). Raises StackFileError if the file is
    missing or malformed.
    """
    path = stack_path(root, stack)
    if not path.is_file():
        raise StackFileError(f"no stack file {path.name} in {root}")
    yaml = _yaml()
    try:
        document = yaml.load(path.read_text(encoding="utf-8")) or {}
    except Exception as exc:
        raise StackFileError(f"{path.name}: not valid YAML: {_yaml_problem(exc)}") from None
    config = document.setdefault("config", {})
    full_key = f"{project}:{key}"
    previous = config.get(full_key)
    config[full_key] = value if isinstance(value, (dict, list)) else str(value)
    buffer = io.StringIO()
    yaml.dump(document, buffer)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return "" if previous is None else str(previous)
