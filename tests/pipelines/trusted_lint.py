"""A lint of the trusted judge jobs (GitHub `pr-judge.yml` job `judge`, GitLab
`.gitlab/judge.yml`): their steps name no head path and run no tool the head could provide.

Rules, each one finding per offending step:
- `command`: every simple command of a `run:` / `script:` starts with a shell builtin, an
  absolute system path (`/usr/bin/...`, `/bin/...`), or one of the job's own tools (`$JUDGE`,
  `$RECORD`, `$pulumi`, `command -v`): never a bare `git`, `make`, `gh`, `pulumi`,
  `dualstack`, `python`, nor a relative `./x` or `.venv/bin/x` that PATH or the head decides.
- `head-path`: no reference to the working tree the head could write: `$PWD`, `$GITHUB_WORKSPACE`
  or `$CI_PROJECT_DIR` outside `$BASE`, a relative `.venv/`, `reports/`, `report.md`,
  `base-checkout`, and no write to `$GITHUB_PATH`.
- `shell`: no `source`, `.`, `eval`, no `|| true` (a verdict is never swallowed), and no
  `PATH`, `PYTHONPATH`, `LD_PRELOAD`, `BASH_ENV` set by the job.
- `checkout`: an `actions/checkout` step checks out only the workflow's own commit (no `ref:`)
  and keeps no credentials (`persist-credentials: false`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

BUILTINS = frozenset(
    [
        "echo",
        "printf",
        "read",
        "exit",
        "continue",
        "break",
        "return",
        "test",
        "[",
        "[[",
        ":",
        "local",
        "set",
        "shift",
        "if",
        "then",
        "elif",
        "else",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "!",
        "{",
        "}",
        "time",
        "export",
    ]
)
"""Words a simple command may start with that run nothing from disk."""

OWN_TOOLS = ("$JUDGE", "$RECORD", "$pulumi", "$BASE/.venv/bin/", "/usr/bin/", "/bin/")
"""Starts of a command that name the job's own toolchain."""

HEAD_PATHS = re.compile(
    r"\$PWD|\$\{?PWD\}?|\$\{?GITHUB_WORKSPACE\}?(?!/base)|\$\{?CI_PROJECT_DIR\}?|GITHUB_PATH"
    r"|(?<![\w$/}])\.venv/|(?<![\w$/}])reports/|(?<![\w$/}.])report\.md|base-checkout"
)
"""References to the head's working tree or to the runner's PATH file."""

SEPARATORS = frozenset({";", "&&", "||", "|", "(", ")", "&", ";;"})


def _logical_lines(script: str) -> list[str]:
    joined = re.sub(r"\\\n", " ", script)
    return [line.strip() for line in joined.splitlines() if line.strip()]


ASSIGNMENT = re.compile(r"[A-Za-z_]\w*(\[[^\]]*\])?\+?=.*")
REDIRECTS = frozenset({">", ">>", "<", "<<<", ">&", "<&", "&>"})


def command_words(script: str) -> list[str]:
    """The first word of every simple command in `script` (after env assignments)."""
    words = []
    for line in _logical_lines(script):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:
            words.append(line)  # unbalanced quotes: flagged as it stands
            continue
        start, skip_header, skip_next, array = True, False, False, False
        for index, token in enumerate(tokens):
            if array:
                array = token != ")"
                continue
            if skip_next:
                skip_next = False
                continue
            if token in REDIRECTS or re.fullmatch(r"\d*[<>]+&?", token):
                skip_next = True
                continue
            if set(token) <= set(";&|()"):
                start, skip_header = True, False
                continue
            if skip_header or not start:
                continue
            if ASSIGNMENT.fullmatch(token):
                array = token.endswith("=") and tokens[index + 1 : index + 2] == ["("]
                if array:
                    skip_next = True  # the "(" itself
                continue
            if token in ("for", "case"):
                skip_header = True
                continue
            if token in ("if", "then", "elif", "else", "do", "while", "until", "!", "{", "}"):
                continue
            words.append(token)
            start = False
    return words


def _allowed(word: str) -> bool:
    return word in BUILTINS or word == "command" or word.startswith(OWN_TOOLS)


def lint_script(where: str, script: str) -> list[str]:
    """Findings for one step's script."""
    findings = []
    for word in command_words(script):
        if not _allowed(word):
            findings.append(f"{where}: command `{word}` is not the job's own tool")
    for match in HEAD_PATHS.finditer(script):
        findings.append(f"{where}: head path `{match[0]}`")
    if re.search(r"(^|[\s;&|])(source|eval)\s|(^|[;&|]\s*)\.\s+\S", script, re.M):
        findings.append(f"{where}: sources or evaluates text")
    if re.search(
        r"(^|[\s;&|(])(PATH|PYTHONPATH|LD_PRELOAD|LD_LIBRARY_PATH|BASH_ENV|ENV)\+?=", script, re.M
    ):
        findings.append(f"{where}: sets the search path or a start-up file of a tool")
    if re.search(r"\|\|\s*true\b", script):
        findings.append(f"{where}: `|| true` swallows a verdict")
    return findings


def lint_github_job(name: str, job: Mapping[str, Any]) -> list[str]:
    """Findings for a trusted GitHub job."""
    findings = []
    for key, value in (job.get("env") or {}).items():
        if key == "PATH" or HEAD_PATHS.search(str(value)):
            findings.append(f"{name} env {key}: head path or PATH `{value}`")
    for index, step in enumerate(job.get("steps") or []):
        where = f"{name} step {step.get('name') or step.get('uses') or index}"
        uses = str(step.get("uses", ""))
        if uses.startswith("actions/checkout"):
            given = step.get("with") or {}
            if "ref" in given or "repository" in given:
                findings.append(f"{where}: checks out another commit than the workflow's own")
            if given.get("persist-credentials") is not False:
                findings.append(f"{where}: keeps the token in .git/config")
        if "run" in step:
            findings += lint_script(where, str(step["run"]))
    return findings


def lint_gitlab_job(name: str, job: Mapping[str, Any]) -> list[str]:
    """Findings for a trusted GitLab job (its before_script, script and after_script)."""
    findings = []
    for key in ("before_script", "script", "after_script"):
        lines = job.get(key) or []
        findings += lint_script(f"{name} {key}", "\n".join(_strings(lines)))
    return findings


def _strings(lines: Iterable[Any]) -> list[str]:
    return [str(line) for line in lines]
