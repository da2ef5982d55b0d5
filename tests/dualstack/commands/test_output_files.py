"""Output files and folders: checked before any work, one-line errors, a render folder that
mirrors the stack."""

from __future__ import annotations

import pytest

from dualstack.cli import main
from dualstack.errors import error_lines


def one_error_line(err: str) -> str:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_gate_markdown_in_a_missing_folder_is_refused_before_any_query(
    project_copy, tmp_path, capsys
):
    target = tmp_path / "reports" / "gate.md"
    # Nothing listens on port 1: had the gate queried first, the error would be "unreachable".
    argv = [
        "-C",
        str(project_copy),
        "gate",
        "--prometheus",
        "http://127.0.0.1:1",
        "--at",
        "1700000000",
    ]
    assert main([*argv, "--markdown", str(target)]) == 2
    err = one_error_line(capsys.readouterr().err)
    assert err == f"error: --markdown {target}: folder {target.parent} does not exist\n"


def test_gate_markdown_that_is_a_folder_is_refused(project_copy, tmp_path, capsys):
    argv = [
        "-C",
        str(project_copy),
        "gate",
        "--prometheus",
        "http://127.0.0.1:1",
        "--at",
        "1700000000",
    ]
    assert main([*argv, "--markdown", str(tmp_path)]) == 2
    assert "is a folder, expected a file name" in one_error_line(capsys.readouterr().err)


def test_policy_config_output_in_a_missing_folder_is_one_line(project_copy, tmp_path, capsys):
    target = tmp_path / "ci" / "policy.json"
    argv = [
        "-C",
        str(project_copy),
        "policy-config",
        "-s",
        "prod",
        "--previous-weight",
        "5",
        "--base",
        "HEAD",
        "--output",
        str(target),
    ]
    assert main(argv) == 2
    err = one_error_line(capsys.readouterr().err)
    assert err == f"error: --output {target}: folder {target.parent} does not exist\n"


def test_render_output_that_is_a_file_is_refused(project_copy, tmp_path, capsys):
    target = tmp_path / "manifests"
    target.write_text("not a folder\n")
    assert (
        main(["-C", str(project_copy), "render", "--stack", "prod", "--output", str(target)]) == 2
    )
    err = one_error_line(capsys.readouterr().err)
    assert err == f"error: --output {target}: exists and is not a folder\n"
    assert target.read_text() == "not a folder\n"


def test_render_output_folder_mirrors_the_stack(project_copy, tmp_path, capsys):
    out = tmp_path / "manifests" / "prod"  # created with its parents
    render = ["-C", str(project_copy), "render", "--stack", "prod", "--output", str(out)]
    assert main(render) == 0
    first = {p.name for p in out.iterdir()}
    rule = "prometheusrule-inference-inference-service-dualstack.yaml"
    assert rule in first
    (out / "README.md").write_text("hand-written\n")
    (out / "notes.yaml").write_text("owner: platform-team\n")
    # Named like a render's file but holding another object: not the render's, kept.
    (out / "deployment-inference-old.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: other, namespace: inference}\n"
    )
    capsys.readouterr()
    assert main([*render, "--set", "monitoring.enabled=false"]) == 0
    second = {p.name for p in out.iterdir()}
    assert rule not in second
    gone = first - second
    assert gone and all(not (out / name).exists() for name in gone)
    assert {"README.md", "notes.yaml", "deployment-inference-old.yaml"} <= second
    assert f"removed {len(gone)} stale from an earlier render" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (
            FileNotFoundError(2, "No such file or directory", "out/gate.md"),
            "No such file or directory: out/gate.md",
        ),
        (PermissionError(13, "Permission denied", "/etc/x"), "Permission denied: /etc/x"),
        (OSError(28, "No space left on device"), "No space left on device"),
    ],
)
def test_os_errors_read_as_cause_and_path(error, line):
    assert error_lines(error) == [line]
