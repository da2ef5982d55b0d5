"""The prompts both backends answer: parsing, validation, the built-in sets.

The seed article sent one prompt 50 times, which tests one input 50 times; here every prompt
must differ, and the built-in set (`prompts.jsonl` beside this file) covers explanation,
arithmetic, code, SQL, translation (German, Chinese), extraction, formats and Unicode. The
accuracy mode's built-in set (`accuracy.jsonl`) has 100 short-answer and arithmetic items,
each with its exact `answer`: enough that two backends answering every item right pass a
5-point tolerance (below 73 items the 95 % interval of the difference is wider than that).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .limits import bounded_yaml_loader, loads, read_regular
from .options import CheckError

BUILTIN_PROMPTS = Path(__file__).with_name("prompts.jsonl")
BUILTIN_ACCURACY = Path(__file__).with_name("accuracy.jsonl")
KEYS = frozenset({"id", "prompt", "messages", "answer"})
MAX_PROMPTS_BYTES = 16 * 1024 * 1024
"""The largest prompts file read (the built-in sets are about 20 KiB)."""


def builtin_file(mode: str) -> Path:
    """The built-in prompt file of a mode: `accuracy.jsonl` for `accuracy`, else
    `prompts.jsonl`."""
    return BUILTIN_ACCURACY if mode == "accuracy" else BUILTIN_PROMPTS


@dataclass(frozen=True)
class Prompt:
    """One request: a completion `prompt` or chat `messages` (exactly one of them is set),
    and for the accuracy mode its reference `answers` (any of them is right)."""

    id: str
    prompt: str | None = None
    messages: tuple[dict[str, str], ...] | None = None
    answers: tuple[str, ...] | None = None

    @property
    def text(self) -> str:
        """The prompt's text (the last message for chat prompts), for reports."""
        return self.prompt if self.prompt is not None else self.messages[-1]["content"]

    def to_json(self) -> dict[str, Any]:
        """The JSON-lines item this prompt was read from."""
        body = (
            {"prompt": self.prompt}
            if self.prompt is not None
            else {"messages": list(self.messages)}
        )
        if self.answers is not None:
            body["answer"] = self.answers[0] if len(self.answers) == 1 else list(self.answers)
        return {"id": self.id, **body}


def _valid_messages(messages: Any) -> bool:
    return (
        isinstance(messages, list)
        and bool(messages)
        and all(
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
            for m in messages
        )
    )


def _answers(answer: Any) -> tuple[str, ...] | None:
    """`answer` (a text, a number, or a list of them) as a tuple of texts; None when absent.
    Raises ValueError when an item is not non-empty text or a number."""
    if answer is None:
        return None
    items = list(answer) if isinstance(answer, list | tuple) else [answer]
    texts = [str(a) for a in items if isinstance(a, str | int) and not isinstance(a, bool)]
    if not items or len(texts) != len(items) or not all(t.strip() for t in texts):
        raise ValueError(answer)
    return tuple(texts)


def parse_prompts(items: Any, origin: str) -> list[Prompt]:
    """Prompts from decoded items: strings, or mappings of `prompt` (text) or `messages`
    (list of {role, content}) with an optional `id` (default `p01`, `p02`, ...) and an
    optional reference `answer` (a text or a list of accepted texts; the accuracy mode needs
    it on every item).

    Raises CheckError naming `origin` and the item on a malformed item, a repeated prompt, a
    repeated id or an empty list.
    """
    if not isinstance(items, list) or not items:
        raise CheckError(f"{origin}: expected a non-empty list of prompts")
    prompts: list[Prompt] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(items, 1):
        where = f"{origin} item {index}"
        item = {"prompt": raw} if isinstance(raw, str) else raw
        if not isinstance(item, dict) or set(item) - KEYS:
            raise CheckError(
                f"{where}: expected a string or a mapping of id, prompt|messages, answer"
            )
        text, messages = item.get("prompt"), item.get("messages")
        if (text is None) == (messages is None):
            raise CheckError(f"{where}: give exactly one of `prompt` and `messages`")
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise CheckError(f"{where}: the prompt must be non-empty text")
        if messages is not None and not _valid_messages(messages):
            raise CheckError(f"{where}: messages must be a list of {{role, content}} mappings")
        try:
            answers = _answers(item.get("answer"))
        except ValueError:
            raise CheckError(f"{where}: answer must be non-empty text or a list of texts") from None
        key = json.dumps(text if text is not None else messages, sort_keys=True)
        if key in seen:
            raise CheckError(f"{where} repeats item {seen[key]}: every prompt must differ")
        seen[key] = index
        prompt_id = str(item.get("id") or f"p{index:02d}")
        if any(p.id == prompt_id for p in prompts):
            raise CheckError(f"{where}: id {prompt_id!r} is used twice")
        prompts.append(Prompt(prompt_id, text, tuple(messages) if messages else None, answers))
    return prompts


def load_prompts(path: str | Path | None, mode: str = "exact") -> list[Prompt]:
    """Prompts from a file: JSON lines (one JSON string or object per line; blank lines and
    `#` comments skipped) or, for `.yaml`/`.yml`, a YAML list (needs PyYAML, which the local
    CLI has and the Job does not need). None reads the built-in set of `mode`
    (`builtin_file`).

    Raises CheckError on an unreadable file, one that is not a regular file (a FIFO, a
    device) or is above `MAX_PROMPTS_BYTES`, text nested too deep, or any `parse_prompts`
    problem.
    """
    file = Path(path) if path else builtin_file(mode)
    try:
        text = read_regular(file, MAX_PROMPTS_BYTES).decode("utf-8")
    except (OSError, ValueError) as exc:  # TooLarge and UnicodeDecodeError are ValueErrors
        raise CheckError(f"prompts file {file}: {getattr(exc, 'strerror', None) or exc}") from None
    if file.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml  # not stdlib: only YAML prompt files on the local CLI need it
        except ImportError:
            raise CheckError(f"{file.name}: YAML needs PyYAML; use JSON lines here") from None
        try:
            return parse_prompts(yaml.load(text, Loader=bounded_yaml_loader(yaml)), file.name)
        except yaml.YAMLError as exc:
            raise CheckError(f"{file.name}: not valid YAML ({str(exc).splitlines()[0]})") from None
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                items.append(loads(line))
            except ValueError as exc:
                raise CheckError(f"{file.name} line {number}: not JSON ({exc})") from None
    return parse_prompts(items, file.name)


def to_jsonl(prompts: list[Prompt]) -> str:
    """Prompts as JSON lines, the format `load_prompts` reads (UTF-8 kept readable)."""
    return "".join(json.dumps(p.to_json(), ensure_ascii=False) + "\n" for p in prompts)
