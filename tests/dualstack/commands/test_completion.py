"""`dualstack completion bash|zsh`: scripts generated from the parser, exercised in a real
bash (and checked by zsh when it is installed): verbs, options, choices and stack names."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests.conftest import REPO


def script(shell: str) -> str:
    """The completion script, generated outside the repo (it needs no stack file)."""
    with tempfile.TemporaryDirectory() as elsewhere:
        done = subprocess.run(
            [sys.executable, "-m", "dualstack", "completion", shell],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=elsewhere,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("completion") / "dualstack.bash"
    path.write_text(script("bash"))
    return str(path)


def complete(bash_script: str, cwd, words: list[str]) -> list[str]:
    """COMPREPLY of the script's completion function for `words` (the last is completed)."""
    line = " ".join(words)
    program = (
        f"source {bash_script}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        f"COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}\n"
        f"_shtab_dualstack dualstack {words[-1]!r} {words[-2]!r}\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        ["bash", "--norc", "-c", program], capture_output=True, text=True, cwd=cwd, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completes_verbs_options_choices_and_stacks(bash_script, tmp_path):
    for name in ("Pulumi.yaml", "Pulumi.prod.yaml", "Pulumi.staging.yaml"):
        (tmp_path / name).write_text("")
    assert complete(bash_script, tmp_path, ["dualstack", "ro"]) == ["rollback"]
    assert complete(bash_script, tmp_path, ["dualstack", "promote", "-s", ""]) == [
        "prod",
        "staging",
    ]
    assert complete(bash_script, tmp_path, ["dualstack", "status", "--stack", "st"]) == ["staging"]
    assert complete(bash_script, tmp_path, ["dualstack", "gate", "--prometheus-h"]) == [
        "--prometheus-http-config"
    ]
    assert complete(bash_script, tmp_path, ["dualstack", "gate", "-o", ""]) == ["text", "json"]
    assert complete(bash_script, tmp_path, ["dualstack", "completion", ""]) == ["bash", "zsh"]


def test_zsh_script_is_a_compdef_with_the_stack_function(tmp_path):
    text = script("zsh")
    assert text.startswith("#compdef dualstack\n")
    assert "_dualstack_stacks() {" in text and "compadd -- ${stacks#Pulumi.}" in text
    if shutil.which("zsh") is None:
        return  # zsh is not part of the tools; its syntax is checked where it is installed
    path = tmp_path / "_dualstack"
    path.write_text(text)
    done = subprocess.run(["zsh", "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
