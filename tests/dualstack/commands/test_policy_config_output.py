"""What `policy-config`'s output flags mean (issue 34): `-o` is the output format, as in every
command (`json`, its only one: the pack's config on stdout); `--output FILE` writes the JSON to
FILE atomically (`dualstack.repo.atomic`): FILE holds its old bytes or the whole new JSON, keeps
its mode, a folder is refused, a symlink followed; a file name given to `-o` is refused in one
line pointing at `--output`, never written as a file named `json`."""

from __future__ import annotations

import json
import stat

import pytest

from dualstack.cli import main
from tests.support.limited_cli import run_cli_limited


def argv(project_copy, *extra: str) -> list[str]:
    return [
        "-C",
        str(project_copy),
        "policy-config",
        "-s",
        "prod",
        "--previous-weight",
        "5",
        "--base",
        "HEAD",
        *extra,
    ]


def test_dash_o_json_prints_the_config_and_writes_no_file(
    project_copy, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main(argv(project_copy, "-o", "json")) == 0
    out = capsys.readouterr().out
    assert "no-unsafe-weight-jump" in json.loads(out)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["policy.json", "out/x.json", "JSON", "yaml", "text", ""])
def test_dash_o_with_anything_but_json_is_one_line_naming_output(
    project_copy, tmp_path, capsys, monkeypatch, value
):
    monkeypatch.chdir(tmp_path)
    assert main(argv(project_copy, "-o", value)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "error: policy-config: argument -o/--output-format: "
    )
    assert "--output FILE" in err
    assert list(tmp_path.iterdir()) == []


def test_output_writes_the_same_json_as_stdout(project_copy, tmp_path, capsys):
    assert main(argv(project_copy)) == 0
    printed = capsys.readouterr().out
    target = tmp_path / "policy.json"
    assert main(argv(project_copy, "--output", str(target))) == 0
    assert target.read_text(encoding="utf-8") == printed
    assert capsys.readouterr().out == ""


def test_output_keeps_the_file_mode_and_leaves_no_temporary_file(project_copy, tmp_path):
    target = tmp_path / "policy.json"
    target.write_text("{}\n")
    target.chmod(0o640)
    assert main(argv(project_copy, "--output", str(target))) == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert json.loads(target.read_text())
    assert [p.name for p in tmp_path.iterdir()] == ["policy.json"]


def test_output_through_a_symlink_replaces_its_target_and_keeps_the_link(project_copy, tmp_path):
    real = tmp_path / "real.json"
    real.write_text("{}\n")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert main(argv(project_copy, "--output", str(link))) == 0
    assert link.is_symlink() and json.loads(real.read_text())


def test_output_that_is_a_folder_is_refused_and_left_alone(project_copy, tmp_path, capsys):
    folder = tmp_path / "policy.json"
    folder.mkdir()
    assert main(argv(project_copy, "--output", str(folder))) == 2
    err = capsys.readouterr().err
    assert err == f"error: --output {folder}: is a folder, expected a file name\n"
    assert folder.is_dir() and list(folder.iterdir()) == []


def test_a_write_cut_short_by_ulimit_leaves_the_old_file(project_copy, tmp_path):
    """A real EFBIG part-way through the write (RLIMIT_FSIZE below the JSON's size): one
    line, exit 2, the old bytes and no temporary file left."""
    target = tmp_path / "policy.json"
    target.write_text('{"old": true}\n')
    done = run_cli_limited(
        argv(project_copy, "--output", str(target)), max_file_bytes=512, cwd=project_copy
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"error: File too large: {target}\n"
    assert target.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["policy.json"]
