"""The emergency rollback's written time budget, read from the docs (the one place it is
written): the table under "## Time budget" of docs/operations.md, the Emergency SOP. Rows are
`| **<Step>** | <what it covers> | <CI seconds> | <laptop seconds> |`.
"""

from __future__ import annotations

import re

from tests.conftest import REPO

ROW = re.compile(
    r"^\| \*\*(?P<step>[^*]+)\*\* \|[^|]*"
    r"\| \**(?P<ci>\d+)\** \| \**(?P<laptop>\d+)\** \|$"
)


def budget() -> dict[str, tuple[int, int]]:
    """{step: (CI seconds, laptop seconds)} in the page's order, `Total` last."""
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("\n## Time budget", 1)[1].split("\n#", 1)[0]
    matches = (ROW.match(line) for line in section.splitlines())
    rows = {m["step"]: (int(m["ci"]), int(m["laptop"])) for m in matches if m}
    if "Total" not in rows:
        raise AssertionError("the SOP's time budget has no **Total** row")
    return rows
