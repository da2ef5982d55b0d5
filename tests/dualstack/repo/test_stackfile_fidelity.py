"""Faithful writes: a weight step is a one-line diff whatever the stack file's style.

`set_config_values` (promote, rollback, verify-precision) keeps line endings (LF, CRLF),
mapping indentation, list dashes flush under their key or indented, comments and quotes.
The files are fixtures written here, in each style a person or a tool might use.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

from dualstack.cli import main
from dualstack.repo.stackfile import detect_style, read_config, set_config_values
from tests.conftest import REPO, git

FLUSH = """\
# staging, lists flush under their key
config:
  dualstack-inference:ascendWeight: "20"  # the step under review
  dualstack-inference:ladder:
  - 0
  - 5
  - 20
  - 50
  - 80
  - 100
  dualstack-inference:ascend:
    pool:
      nodes:
      - ascend-01
      - ascend-02
      extraTaints:
      - key: maintenance
        effect: NoSchedule
"""

INDENTED = """\
config:
  # weight first
  dualstack-inference:ascendWeight: '20'
  dualstack-inference:ladder:
    - 0
    - 20
    - 100
  dualstack-inference:nvidia:
    pool:
      nodes:
        - nvidia-01
"""

FOUR_SPACES = """\
config:
    dualstack-inference:ascendWeight: 20
    dualstack-inference:ladder:
        - 0
        - 20
        - 100
    dualstack-inference:capacity:
        totalReplicas: 2  # small footprint
"""

FLOW = """\
config:
  dualstack-inference:ladder: [0, 20, 100]
  dualstack-inference:ascendWeight: "20"
  dualstack-inference:istio: {hosts: [api.example.com]}
encryptionsalt: v1:abc
"""

STYLES = {"flush": FLUSH, "indented": INDENTED, "four-spaces": FOUR_SPACES, "flow": FLOW}


def changed_lines(before: str, after: str) -> list[str]:
    """The `-`/`+` lines of a unified diff, without headers."""
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("style", sorted(STYLES))
def test_a_step_is_a_one_line_diff(tmp_path: Path, style: str, newline: str) -> None:
    text = STYLES[style].replace("\n", newline)
    path = tmp_path / "Pulumi.s.yaml"
    path.write_bytes(text.encode())
    previous = set_config_values(tmp_path, "s", {"ascendWeight": 50})["ascendWeight"]
    after = path.read_bytes().decode()
    assert previous == "20"
    old = next(line for line in text.split(newline) if "ascendWeight" in line)
    new = next(line for line in after.split(newline) if "ascendWeight" in line)
    assert changed_lines(text.replace("\r\n", "\n"), after.replace("\r\n", "\n")) == [
        f"-{old}",
        f"+{new}",
    ]
    assert after.count("\r\n") == text.count("\r\n")  # every line keeps its ending
    assert read_config(tmp_path, "s")["dualstack-inference:ascendWeight"] in ("50", 50)


def test_quotes_and_plain_integers_keep_their_style(tmp_path: Path) -> None:
    for quoted, expected in (('"20"', '"50"'), ("'20'", "'50'"), ("20", "50")):
        path = tmp_path / "Pulumi.q.yaml"
        path.write_text(f"config:\n  dualstack-inference:ascendWeight: {quoted}\n")
        set_config_values(tmp_path, "q", {"ascendWeight": 50})
        assert path.read_text() == f"config:\n  dualstack-inference:ascendWeight: {expected}\n"


def test_a_new_key_is_one_added_line_in_pulumis_quotes(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.n.yaml"
    text = '# prod\r\nconfig:\r\n    dualstack-inference:ascendWeight: "5"\r\n'
    path.write_bytes(text.encode())
    set_config_values(tmp_path, "n", {"verifiedAscendImage": "registry/x:v1.2.3-npu"})
    assert path.read_bytes().decode() == (
        text + '    dualstack-inference:verifiedAscendImage: "registry/x:v1.2.3-npu"\r\n'
    )


def test_a_file_without_a_final_newline_keeps_it_so(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.e.yaml"
    path.write_text('config:\n  dualstack-inference:ascendWeight: "5"')
    set_config_values(tmp_path, "e", {"ascendWeight": 20})
    assert path.read_text() == 'config:\n  dualstack-inference:ascendWeight: "20"'


@pytest.mark.parametrize(
    ("style", "expected"),
    [("flush", (2, 0)), ("indented", (2, 2)), ("four-spaces", (4, 4)), ("flow", (2, 2))],
)
def test_detect_style(style: str, expected: tuple[int, int]) -> None:
    assert detect_style(STYLES[style]) == expected


@pytest.fixture
def crlf_repo(tmp_path: Path) -> Path:
    """A git repo whose fixture stack file uses CRLF and flush lists, committed on main."""
    repo = tmp_path / "gitops"
    repo.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", repo / "Pulumi.yaml")
    (repo / "Pulumi.s.yaml").write_bytes(FLUSH.replace("\n", "\r\n").encode())
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "core.autocrlf=false", "add", ".")
    git(repo, "commit", "-q", "-m", "crlf stack")
    return repo


def test_rollback_of_a_crlf_flush_file_changes_one_line(
    crlf_repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no pulumi CLI: the file is edited in place
    before = (crlf_repo / "Pulumi.s.yaml").read_bytes().decode()
    assert main(["-C", str(crlf_repo), "rollback", "--stack", "s", "--to", "5"]) == 0
    after = (crlf_repo / "Pulumi.s.yaml").read_bytes().decode()
    assert after.count("\r\n") == before.count("\r\n") == len(before.splitlines())
    # the comment keeps its column, so the shorter value leaves one more space before it
    assert changed_lines(before, after) == [
        '-  dualstack-inference:ascendWeight: "20"  # the step under review',
        '+  dualstack-inference:ascendWeight: "5"   # the step under review',
    ]
    assert "Rolled back stack s: Ascend weight 20% -> 5%" in capsys.readouterr().out
