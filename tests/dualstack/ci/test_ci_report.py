"""The pull-request report: statuses, verdict, fail-closed cases, size limit, CLI."""

from __future__ import annotations

from pathlib import Path

from dualstack.ci.report import (
    MARKER,
    PARTS,
    clip,
    fence,
    read_results,
    render,
    verdict,
)
from dualstack.cli import main


def record(root: Path, stack: str, part: str, rc: int | None, out: str = "", ext: str = "txt"):
    folder = root / stack
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{part}.{ext}").write_text(out, encoding="utf-8")
    if rc is not None:
        (folder / f"{part}.rc").write_text(f"{rc}\n", encoding="utf-8")


def skip(root: Path, stack: str, part: str, reason: str) -> None:
    (root / stack).mkdir(parents=True, exist_ok=True)
    (root / stack / f"{part}.skipped").write_text(reason + "\n", encoding="utf-8")


def statuses(root: Path, stacks: list[str]) -> dict[str, list[str]]:
    return {s: [r.status for r in rs] for s, rs in read_results(root, stacks).items()}


def test_all_passing_with_online_checks_skipped(tmp_path: Path) -> None:
    record(tmp_path, "prod", "offline-preview", 0, "ascendWeight 5 -> 20\nall policies pass")
    for part in ("policy-config", "pulumi-preview"):
        skip(tmp_path, "prod", part, "no PULUMI_ACCESS_TOKEN secret: online preview skipped")
    skip(tmp_path, "prod", "gate", "no PROMETHEUS_URL variable: gate skipped")
    results = read_results(tmp_path, ["prod"])
    assert verdict(results) == 0
    text = render(results)
    assert text.startswith(MARKER + "\n### dualstack pull-request check: ✅ passed")
    assert "| `prod` | ✅ pass | ⏭️ skipped | ⏭️ skipped | ⏭️ skipped |" in text
    assert "ascendWeight 5 -> 20" in text
    assert "_no PULUMI_ACCESS_TOKEN secret: online preview skipped_" in text


def test_mandatory_violation_fails_and_is_shown_open(tmp_path: Path) -> None:
    record(tmp_path, "staging", "offline-preview", 0, "ok")
    record(tmp_path, "prod", "offline-preview", 1, "no-unsafe-weight-jump: 5 -> 80")
    results = read_results(tmp_path, ["staging", "prod"])
    assert verdict(results) == 1
    text = render(results)
    assert "❌ failed: a mandatory policy violation" in text
    assert "| `prod` | ❌ failed (exit 1) |" in text
    assert "<details open><summary>Offline preview and policies" in text
    assert text.index("#### `staging`") < text.index("#### `prod`")


def test_online_preview_failure_fails_the_check(tmp_path: Path) -> None:
    record(tmp_path, "prod", "offline-preview", 0)
    record(tmp_path, "prod", "policy-config", 0)
    record(tmp_path, "prod", "pulumi-preview", 255, "error: preview failed: 1 policy violation")
    assert verdict(read_results(tmp_path, ["prod"])) == 1


def test_failed_gate_is_advisory(tmp_path: Path) -> None:
    record(tmp_path, "prod", "offline-preview", 0)
    record(tmp_path, "prod", "gate", 1, "| error ratio | FAIL |", ext="md")
    results = read_results(tmp_path, ["prod"])
    assert verdict(results) == 0
    text = render(results)
    assert "⚠️ failed (exit 1), advisory" in text
    assert "| error ratio | FAIL |" in text  # Markdown embedded as is, not fenced
    assert "```text\n| error ratio" not in text


def test_errors_are_never_a_pass(tmp_path: Path) -> None:
    record(tmp_path, "prod", "offline-preview", 2, "error: Pulumi.prod.yaml: no such file")
    assert verdict(read_results(tmp_path, ["prod"])) == 2
    # A stack whose offline preview left no exit code (the step died) is an error too.
    record(tmp_path, "staging", "offline-preview", None, "half an output")
    assert statuses(tmp_path, ["staging"])["staging"][0] == "error"
    # An unreadable exit code as well.
    (tmp_path / "staging" / "offline-preview.rc").write_text("killed\n")
    assert statuses(tmp_path, ["staging"])["staging"][0] == "error"
    # And a stack with nothing recorded at all.
    assert verdict(read_results(tmp_path, ["dev"])) == 2


def test_unrun_optional_parts_are_dashes(tmp_path: Path) -> None:
    record(tmp_path, "prod", "offline-preview", 0)
    assert statuses(tmp_path, ["prod"]) == {"prod": ["pass", "not-run", "not-run", "not-run"]}
    assert "| `prod` | ✅ pass | — | — | — |" in render(read_results(tmp_path, ["prod"]))


def test_no_changed_stack(tmp_path: Path) -> None:
    results = read_results(tmp_path, [])
    assert verdict(results) == 0
    assert "No stack changed" in render(results)


def test_fence_survives_backticks_in_the_output() -> None:
    text = "diff:\n```yaml\nweight: 20\n```"
    assert fence(text).startswith("````text\n")
    assert fence(text).endswith("\n````")


def test_clip_keeps_head_and_tail() -> None:
    text = "HEAD" + "x" * 10_000 + "TAIL"
    clipped = clip(text, 900)
    assert clipped.startswith("HEAD") and clipped.endswith("TAIL")
    assert "characters cut" in clipped
    assert len(clipped) < 1_000
    assert clip("short", 900) == "short"


def test_report_fits_a_github_comment(tmp_path: Path) -> None:
    """GitHub refuses comments over 65,536 characters; huge outputs are clipped to fit."""
    for stack in ("dev", "staging", "prod"):
        for part in PARTS:
            record(tmp_path, stack, part.name, 0, "line of output\n" * 20_000)
    text = render(read_results(tmp_path, ["dev", "staging", "prod"]))
    assert len(text) <= 65_536
    assert text.count("characters cut") == 12


def test_cli_writes_report_and_exits_with_verdict(tmp_path: Path, capsys) -> None:
    reports = tmp_path / "reports"
    record(reports, "staging", "offline-preview", 0, "fine")
    record(reports, "prod", "offline-preview", 1, "no-unsafe-weight-jump")
    out = tmp_path / "report.md"
    argv = ["ci", "report", "--dir", str(reports), "--stacks", "staging prod", "--output"]
    assert main([*argv, str(out)]) == 1
    assert out.read_text(encoding="utf-8").startswith(MARKER)
    log = capsys.readouterr().out
    assert "| `prod` | ❌ failed (exit 1) |" in log
    assert (
        main(["ci", "report", "--dir", str(reports), "--stacks", "staging", "--output", str(out)])
        == 0
    )
