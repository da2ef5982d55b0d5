"""The docs site builds with `mkdocs build --strict` (mkdocs.yml): a broken link or anchor, or
a page left out of the nav, fails the build, and so this test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

BUILD_TIMEOUT_S = 120


def build(root: Path, site: Path, config: str = "mkdocs.yml") -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of the site at `root` (its `config`) into `site`."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            config,
            "--site-dir",
            str(site),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def site_copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(REPO / "docs", root / "docs")
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    return root


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = build(site_copy(tmp_path), tmp_path / "site")
    assert done.returncode == 0, done.stderr
    pages = {
        p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("*.html")
    }
    assert {"index.html", "operations.html", "reference/policies.html"} <= pages


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    root = site_copy(tmp_path)
    page = root / "docs" / "concepts.md"
    text = page.read_text(encoding="utf-8")
    for broken in ("[gone](no-such-page.md)", "[gone](trust-model.md#no-such-anchor)"):
        page.write_text(f"{text}\n{broken}\n", encoding="utf-8")
        done = build(root, tmp_path / "site")
        assert done.returncode == 1, broken
        assert "concepts.md" in done.stderr
