"""docs/ARCHITECTURE.md's floor plan matches the tree: every module it names exists, and every
package is named under its parent (the README and the docs site link to it instead of keeping a
copy)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO

ARCHITECTURE = REPO / "docs" / "ARCHITECTURE.md"
ROOTS = ("components", "dualstack", "policies", "precision_check")
DESCRIPTION_COLUMN = 19
"""Where the floor plan's descriptions start: a line indented this far continues the entry
above it."""
_MODULE = re.compile(r"(?<![\w./])([\w/]+\.py)\b")
_FOLDER = re.compile(r"(?<![\w./])([\w]+)/(?![\w.])")
_PATH = re.compile(
    r"(?<![\w./])((?:components|dualstack|policies|precision_check|tests)/[\w/.-]*\w)"
)


def floor_plan(markdown: str) -> str:
    """The first fenced block after the `## The floor plan` heading."""
    section = markdown.split("## The floor plan", 1)[1]
    return section.split("```", 2)[1].split("\n", 1)[1]


def plan_problems(plan: str, root: Path) -> list[str]:
    """What the floor plan `plan` says that the tree at `root` contradicts: a named module
    that is not in its folder (nor one folder down, as `routers/ (istio.py, ...)`), and a
    package (a folder with `__init__.py`) of `ROOTS` not named in its parent's lines."""
    text_of: dict[str, str] = {}  # folder (repo-relative) -> the plan's text about it
    folders: list[str] = []  # the folder of each depth of the current entry
    current = ""
    for line in plan.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        entry = line.strip().split(" ", 1)[0] if line.strip() else ""
        if entry and indent < DESCRIPTION_COLUMN:  # a new entry, at depth indent // 2
            del folders[indent // 2 :]
            parent = "/".join(folders)
            if entry.endswith("/"):  # a folder: named in its parent's text
                text_of[parent] = text_of.get(parent, "") + " " + entry
                folders.append(entry.rstrip("/"))
            current = "/".join(folders)
        text_of[current] = text_of.get(current, "") + " " + line
    problems = []
    for folder, text in text_of.items():
        for name in _MODULE.findall(text):
            here = root / folder / name
            if not here.is_file() and not list((root / folder).glob(f"*/{name}")):
                problems.append(f"{folder}/: names {name}, which is not there")
    for top in ROOTS:
        for init in sorted((root / top).rglob("__init__.py")):
            package = init.parent.relative_to(root).as_posix()
            parent, _, name = package.rpartition("/")
            if name not in _FOLDER.findall(text_of.get(parent, "")):
                problems.append(f"package {package}/ is not named under {parent or 'the root'}")
    return problems


def test_the_floor_plan_names_what_the_tree_holds() -> None:
    plan = floor_plan(ARCHITECTURE.read_text(encoding="utf-8"))
    assert plan_problems(plan, REPO) == []


def test_every_path_the_architecture_names_exists() -> None:
    """Beyond the floor plan: the owners table and the rules name files by their path."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = set(_PATH.findall(text))
    assert "dualstack/repo/git.py" in named  # the list is the real one
    assert sorted(path for path in named if not (REPO / path).exists()) == []


def test_a_stale_or_missing_entry_is_found(tmp_path: Path) -> None:
    for package in ("components", "components/routers", "dualstack", "dualstack/repo"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "components" / "stack.py").write_text("")
    plan = (
        "components/        the program\n"
        "  stack.py gone.py\n"
        "dualstack/         the CLI\n"
        "  repo/            git.py (run git)\n"
    )
    assert plan_problems(plan, tmp_path) == [
        "components/: names gone.py, which is not there",
        "dualstack/repo/: names git.py, which is not there",
        "package components/routers/ is not named under components",
    ]


def test_the_readme_and_the_site_link_to_the_floor_plan_instead_of_copying_it() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/ARCHITECTURE.md" in readme
    entry = "  settings/        one frozen pydantic tree"  # a line of the floor plan
    assert entry in ARCHITECTURE.read_text(encoding="utf-8")
    pages = [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    assert [p.name for p in pages if p != ARCHITECTURE and entry in p.read_text("utf-8")] == []
