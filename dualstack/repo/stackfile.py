"""Read and edit `Pulumi.<stack>.yaml` the way `pulumi config` does, keeping comments.

Stack files hold `config: {"<project>:<key>": value}`; `pulumi config set ascendWeight 20`
stores the string "20", structured keys are YAML mappings. Reads go through ruamel.yaml in
round-trip mode, so an edit changes the one line it must and keeps comments and layout: the
file's line breaks are kept line by line (LF, CRLF, a lone CR, mixed: a changed line keeps its
own, `with_endings`), its mapping indent and where its list dashes sit (flush under their key
or indented) are detected before the dump and kept. The file is replaced atomically
(`dualstack.repo.atomic`): a failed or killed write leaves the old bytes, and keeps its mode.

Input is bounded: a stack file is at most `MAX_FILE_BYTES`, UTF-8, and its YAML may expand
(aliases included) to at most `MAX_VALUES` values, so a small file of nested aliases cannot
take minutes and gigabytes to read.
"""

from __future__ import annotations

import difflib
import io
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import TaggedScalar
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

from components.settings import PROJECT
from components.settings.scalars import WrittenInteger, shown, yaml_integer
from dualstack.repo.atomic import write_file
from dualstack.repo.git import GitError, entry_mode, show_file
from dualstack.repo.stack_names import STACK_NAME, stack_of

MAX_FILE_BYTES = 1024 * 1024
"""Largest stack file read, in bytes (the committed ones are about 1 KiB)."""
MAX_VALUES = 100_000
"""Most values (mapping entries and list items, aliases expanded) a stack file may hold."""


class StackFileError(RuntimeError):
    """A stack file is missing, unreadable or not a Pulumi stack file."""


def check_stack_name(stack: str) -> str:
    """`stack` when it can name a `Pulumi.<stack>.yaml`; StackFileError naming `--stack`
    otherwise (`a/b`: a fully qualified `org/project/stack` has its own name last)."""
    if STACK_NAME.fullmatch(stack) and stack not in (".", ".."):
        return stack
    own = stack.rstrip("/").rsplit("/", 1)[-1]
    hint = (
        f"; for a fully qualified org/project/stack pass the stack's own name ({shown(own, 60)})"
        if "/" in stack and STACK_NAME.fullmatch(own)
        else ""
    )
    raise StackFileError(
        f"--stack {shown(stack, 80)}: not a stack name (letters, digits, '-', '_' and '.', "
        f"at most 100 characters){hint}"
    )


def stacks(root: Path) -> list[str]:
    """The stacks of the project at `root`: every `Pulumi.<stack>.yaml` file there (`stack_of`),
    sorted by name. The one answer to "which stacks are there" (`-s` defaults, `rollback --all
    --emergency`, the messages naming the stacks)."""
    found = (stack_of(p.name) for p in Path(root).glob("Pulumi.*") if p.is_file())
    return sorted(stack for stack in found if stack is not None)


def stack_path(root: Path, stack: str) -> Path:
    """`<root>/Pulumi.<stack>.yaml`; StackFileError when `stack` is not a stack name."""
    return Path(root) / f"Pulumi.{check_stack_name(stack)}.yaml"


def _yaml(mapping: int = 2, offset: int = 2) -> YAML:
    """A round-trip YAML with `mapping` spaces per level and list dashes `offset` spaces in
    from their parent key (0: flush under it)."""
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    yaml.width = 4096
    return yaml


class _ReadConstructor(RoundTripConstructor):
    """Reads (not edits) of a stack file: an integer scalar becomes what
    `components.settings.scalars.yaml_integer` says, so `020`, `0x14`, `0o24` or `2_0` reach
    the settings as written, to be refused, never as the number one YAML library makes of
    them."""

    def construct_yaml_int(self, node: Any) -> Any:
        return yaml_integer(str(self.construct_scalar(node)))


_ReadConstructor.add_constructor("tag:yaml.org,2002:int", _ReadConstructor.construct_yaml_int)


def _reading_yaml() -> YAML:
    yaml = _yaml()
    yaml.Constructor = _ReadConstructor
    return yaml


STR_TAG = "tag:yaml.org,2002:str"
"""`!!str`: the one explicit tag a read resolves (`!!str 20` is the text "20", as `"20"`)."""


_KEY_LINE = re.compile(r"^( *)[^\s#-][^#]*:\s*(#.*)?$")
_DASH_LINE = re.compile(r"^( *)- ")
_INDENTED = re.compile(r"^( +)[^\s#]")


def detect_style(text: str) -> tuple[int, int]:
    """(mapping indent, list dash offset) of a YAML text: the indent of its first indented
    line, and how far the first list's dashes sit in from their key (0 flush, 2 indented).
    Defaults (2, 2) for what the text does not show."""
    mapping = offset = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if mapping is None and (indented := _INDENTED.match(line)):
            mapping = len(indented.group(1))
        key = _KEY_LINE.match(line)
        if (
            offset is None
            and key
            and i + 1 < len(lines)
            and (dash := _DASH_LINE.match(lines[i + 1]))
        ):
            offset = len(dash.group(1)) - len(key.group(1))
        if mapping is not None and offset is not None:
            break
    return mapping or 2, 2 if offset is None or offset < 0 else offset


def _yaml_problem(exc: Exception) -> str:
    """`line 4, column 3: mapping values are not allowed here` from a ruamel error."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return problem
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


class _Budget:
    """Counts the values `_plain` copies; aliases are copied each time they are used."""

    def __init__(self, origin: str, limit: int = MAX_VALUES) -> None:
        self.origin, self.left = origin, limit

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise StackFileError(
                f"{self.origin}: expands to more than {MAX_VALUES} values (nested YAML aliases?); "
                "a stack file holds a few hundred"
            )


def _tag(value: Any) -> str | None:
    """The explicit tag on a value (`!foo`, `tag:yaml.org,2002:str`), None without one."""
    tag = getattr(value, "tag", None)
    return getattr(tag, "value", tag) if tag is not None else None


def _plain(value: Any, budget: _Budget, path: str = "") -> Any:
    """ruamel's round-trip containers -> plain dict/list/str/int, within `budget`; `path` (the
    dotted key) names a value in messages. A `!!str` scalar is its text; a value with any
    other explicit tag raises StackFileError naming the key (`budget`'s origin, `path`)."""
    budget.spend()
    tag = _tag(value)
    if isinstance(value, TaggedScalar) and tag == STR_TAG:
        return str(value.value or "")
    if tag is not None:
        shown_tag = tag.replace("tag:yaml.org,2002:", "!!")
        raise StackFileError(
            f"{budget.origin}: {path}: the YAML tag {shown(shown_tag, 60)} is not read (only "
            "!!str and the types a plain value has); write the value without it"
        )
    if isinstance(value, dict):
        return {
            str(k): _plain(v, budget, f"{path}.{k}" if path else str(k)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_plain(v, budget, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, WrittenInteger):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value


def decode(data: bytes, origin: str) -> str:
    """A stack file's bytes as text: at most `MAX_FILE_BYTES`, UTF-8 (a BOM is dropped).

    Raises StackFileError naming `origin` otherwise.
    """
    if len(data) > MAX_FILE_BYTES:
        raise StackFileError(
            f"{origin}: {len(data)} bytes, more than the {MAX_FILE_BYTES} a stack file may have"
        )
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise StackFileError(
            f"{origin}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None


def parse_config(text: str, origin: str) -> dict[str, Any]:
    """The `config:` mapping of a stack file's text; {} when the file has none.

    Raises StackFileError naming `origin` when the YAML is malformed or not a mapping, the
    text is larger than `MAX_FILE_BYTES` or expands to more than `MAX_VALUES` values.
    """
    document = _document(text, origin)
    return _plain(document.get("config") or {}, _Budget(origin))


def parse_outside_config(text: str, origin: str) -> dict[str, Any]:
    """The stack file's top-level keys other than `config:`, as plain data: `environment`
    (the Pulumi ESC environments whose `pulumiConfig` the CLI merges into the stack's config
    on `pulumi up`, or an inline definition), `secretsprovider`, `encryptedkey`,
    `encryptionsalt` (pulumi.com/docs/iac/concepts/projects/stack-settings-file). Raises
    StackFileError as `parse_config`."""
    document = _document(text, origin)
    rest = {str(key): value for key, value in document.items() if key != "config"}
    return _plain(rest, _Budget(origin))


def _document(text: str, origin: str) -> dict[str, Any]:
    """The stack file's top-level mapping ({} for an empty file); StackFileError otherwise."""
    if len(text) > MAX_FILE_BYTES:
        raise StackFileError(
            f"{origin}: {len(text)} characters, more than the {MAX_FILE_BYTES} a stack file "
            "may have"
        )
    try:
        document = _reading_yaml().load(text)
    except Exception as exc:  # ruamel raises several unrelated error types
        raise StackFileError(f"{origin}: not valid YAML: {_yaml_problem(exc)}") from None
    if document is None:
        return {}
    if not isinstance(document, dict) or not isinstance(document.get("config", {}), dict):
        raise StackFileError(f"{origin}: expected a mapping with a `config:` mapping")
    return document


def read_config(root: Path, stack: str) -> dict[str, Any]:
    """The config of `Pulumi.<stack>.yaml` in `root`. Raises StackFileError if missing."""
    path = stack_path(root, stack)
    if not path.is_file():
        raise StackFileError(
            f"no stack file {path.name} in {root}; stacks here: {', '.join(stacks(root)) or 'none'}"
        )
    return parse_config(read_text(path), path.name)


REGULAR_MODES = ("100644", "100755")
"""git modes of a regular file; a stack file has one of them (a symlink, 120000, is refused)."""


def _regular(path: Path) -> None:
    """StackFileError unless `path` is a regular file itself: a symlink would make the stack
    file another file's bytes (`Pulumi.prod.yaml` into `docs/`, where changes are inert), a
    FIFO or device would block the read. A missing file passes (the read says so)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise StackFileError(
            f"{path.name}: a symlink (to {path.readlink()}), not a regular file; a stack file "
            "must be a regular file"
        )
    if not stat.S_ISREG(mode):
        raise StackFileError(f"{path.name}: not a regular file")


def show_stack_text(root: Path, ref: str, name: str) -> str | None:
    """The text of stack file `name` (repo-relative to `root`) at commit `ref`; None when it
    does not exist there. git's own view decides what it is: an entry that is no regular
    file (`REGULAR_MODES`; a symlink's blob is its target's path) is refused.

    Raises StackFileError naming `ref:name` for such an entry, GitError when git fails."""
    mode = entry_mode(root, ref, f"./{name}")
    if mode is None:
        return None
    if mode not in REGULAR_MODES:
        what = "a symlink" if mode == "120000" else "an entry"
        raise StackFileError(
            f"{ref}:{name}: {what} (git mode {mode}), not a regular file; a stack file must be "
            "a regular file"
        )
    return show_file(root, ref, f"./{name}")


def read_text(path: Path) -> str:
    """A stack file's text (see `decode`); StackFileError when it cannot be read or is not a
    regular file (a symlink is refused, never followed)."""
    _regular(path)
    return decode(_read_bytes(path), path.name)


def _read_bytes(path: Path) -> bytes:
    """The bytes of the regular file `path`, at most `MAX_FILE_BYTES` (a larger file is
    refused before it is read); StackFileError when it cannot be read."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise StackFileError(
                f"{path.name}: {path.stat().st_size} bytes, more than the {MAX_FILE_BYTES} a "
                "stack file may have"
            )
        return path.read_bytes()
    except OSError as exc:
        raise StackFileError(f"{path.name}: {exc.strerror or exc}") from None


def read_config_at(root: Path, stack: str, ref: str) -> dict[str, Any] | None:
    """The config of the stack at git `ref`; None when the stack file did not exist there.

    Raises StackFileError when `ref` is not a commit of the repository at `root` or git
    fails (through the one git runner, `dualstack.repo.git`, with its timeout).
    """
    name = stack_path(Path(), stack).name
    try:
        text = show_stack_text(root, ref, name)
    except GitError as exc:
        if "is not a commit" in str(exc):
            raise StackFileError(f"git ref {ref!r} is not a commit in {root}") from None
        raise StackFileError(f"{ref}:{name}: {exc}") from None
    if text is None:
        return None
    return parse_config(text, f"{ref}:{name}")


def _styled(value: Any, previous: Any) -> Any:
    """`value` as `pulumi config set` stores it (a string for scalars), in the quoting the
    previous value had: `"20"` stays double-quoted, `'20'` single-quoted, a plain YAML
    integer stays a plain integer; a new key gets double quotes, as Pulumi writes them."""
    if isinstance(value, dict | list):
        return value
    text = str(value)
    if isinstance(previous, int) and not isinstance(previous, bool) and text.isdigit():
        return int(text)
    if isinstance(previous, SingleQuotedScalarString):
        return SingleQuotedScalarString(text)
    if isinstance(previous, str) and not isinstance(previous, DoubleQuotedScalarString):
        return text
    return DoubleQuotedScalarString(text)


def _styled_nested(value: Any, previous: Any) -> Any:
    """`value` under a path (`pulumi config set --path`), in the kind and quoting the previous
    value had: a plain integer stays one, `"20"` stays double-quoted, `'20'` single-quoted; a
    new key gets what `--path` writes (digits an integer, other text a plain string)."""
    if isinstance(value, dict | list):
        return value
    text = str(value)
    if isinstance(previous, SingleQuotedScalarString):
        return SingleQuotedScalarString(text)
    if isinstance(previous, DoubleQuotedScalarString):
        return DoubleQuotedScalarString(text)
    if isinstance(previous, str):
        return text
    if text.isdigit() and text.isascii():
        return int(text)
    return text


def _set_path(config: Any, full_key: str, path: list[str], value: Any, origin: str) -> Any:
    """Set `config[full_key]` (`path` empty) or the field `path` inside it; the previous value.

    Raises StackFileError when a part of the path is there but not a mapping."""
    if not path:
        previous = config.get(full_key)
        config[full_key] = _styled(value, previous)
        return previous
    node = config
    key = full_key
    for part in path:
        child = node.get(key)
        if child is None:
            node[key] = {}
            child = node[key]
        if not isinstance(child, dict):
            raise StackFileError(
                f"{origin}: {key} = {shown(child, 60)} is not a mapping; cannot set "
                f"{'.'.join([full_key, *path])} in it"
            )
        node, key = child, part
    previous = node.get(key)
    node[key] = _styled_nested(value, previous)
    return previous


def set_config_values(
    root: Path, stack: str, values: Mapping[str, Any], project: str = PROJECT
) -> dict[str, str]:
    """Set each `<project>:<key>` of `values` in `Pulumi.<stack>.yaml` in one write, keeping
    every other line, comment and quote as it was, the file's line breaks (`with_endings`), its
    indentation and its list style (see `detect_style`), so a step is a one-line diff. A
    dotted key is a path into a structured key (`services.chat.ascendWeight`: the field
    `ascendWeight` of `services.chat`), created when absent, as `pulumi config set --path`.
    A scalar is stored as those commands store it: a string at the top level, digits an
    integer under a path.

    Returns {key: the previous value as text ("" when unset)}. Raises StackFileError if the
    file is missing or malformed, or a path runs through a value that is not a mapping; on
    any error the file is left as it was.
    """
    path = stack_path(root, stack)
    _regular(path)
    if not path.is_file():
        raise StackFileError(f"no stack file {path.name} in {root}")
    raw = _read_bytes(path)
    text = decode(raw, path.name)
    bom = "\ufeff" if raw.startswith(b"\xef\xbb\xbf") else ""
    lines = split_lines(text)
    text = "".join(content + "\n" for content, _ending in lines)
    if lines and not lines[-1][1]:
        text = text[:-1]
    yaml = _yaml(*detect_style(text))
    try:
        document = yaml.load(text)
    except Exception as exc:
        raise StackFileError(f"{path.name}: not valid YAML: {_yaml_problem(exc)}") from None
    if document is None:
        document = {}
    if not isinstance(document, dict) or not isinstance(document.get("config", {}), dict):
        raise StackFileError(f"{path.name}: expected a mapping with a `config:` mapping")
    if document.get("config") is None:
        document["config"] = {}
    config = document["config"]
    previous = {}
    for key, value in values.items():
        top, *inner = key.split(".")
        before = _set_path(config, f"{project}:{top}", inner, value, path.name)
        previous[key] = "" if before is None else str(before)
    buffer = io.StringIO()
    yaml.dump(document, buffer)
    out = with_endings(lines, buffer.getvalue())
    try:
        write_file(path, (bom + out).encode("utf-8"))
    except OSError as exc:
        raise StackFileError(
            f"{path.name}: not written ({exc.strerror or exc}); the file is unchanged"
        ) from None
    return previous


_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n)")


def split_lines(text: str) -> list[tuple[str, str]]:
    """`text` as (line, its line break) pairs: LF, CRLF or a lone CR (YAML's three line
    breaks), `""` for a last line without one. Joining the pairs gives `text` again."""
    lines = [(m[1], m[2]) for m in _LINE.finditer(text)]
    tail = text[sum(len(a) + len(b) for a, b in lines) :]
    return [*lines, (tail, "")] if tail else lines


def with_endings(before: list[tuple[str, str]], after: str) -> str:
    """`after` (a dump with LF line breaks) with the line breaks of `before` (the file's
    lines, `split_lines`): a line kept, or changed in place, keeps its own break (LF, CRLF or
    CR, however mixed the file is); an added line takes the break of the line above it (the
    file's most common one at the top). A file that ended without a line break still does."""
    new = after.split("\n")
    if new and new[-1] == "":
        new.pop()
    old = [content for content, _ in before]
    endings = [ending for _, ending in before]
    common = max(("\n", "\r\n", "\r"), key=lambda e: (endings.count(e), e == "\n"))
    chosen: list[str] = []
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    chosen += endings[:start]
    matcher = difflib.SequenceMatcher(
        None, old[start : len(old) - end], new[start : len(new) - end], autojunk=False
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        i1, i2 = i1 + start, i2 + start
        if tag in ("equal", "replace"):
            chosen += [endings[min(i1 + k, i2 - 1)] for k in range(j2 - j1)]
        elif tag == "insert":
            above = endings[i1 - 1] if i1 > 0 else common
            chosen += [above] * (j2 - j1)
    chosen += endings[len(endings) - end :] if end else []
    chosen = [ending or common for ending in chosen]
    if chosen and before and not before[-1][1]:
        chosen[-1] = ""
    return "".join(line + ending for line, ending in zip(new, chosen, strict=True))
