""" "Your first rung" in the README and docs/first-rung.md is what the commands print today, run
on a fixture repo against a real Prometheus (tests/docs/first_rung.py; `make docs` writes it),
and the README stays a front door: short, in the issue's order."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO
from tests.docs import first_rung
from tests.support.prometheus_server import require_prometheus

README_MAX_LINES = 300


@pytest.fixture(scope="module")
def outputs() -> dict[str, tuple[str, int]]:
    require_prometheus()
    return first_rung.run_steps()


def test_the_page_and_the_readme_show_what_the_commands_print(outputs) -> None:
    assert first_rung.PAGE.read_text("utf-8") == first_rung.page(outputs), "run `make docs`"
    readme = first_rung.README.read_text("utf-8")
    assert readme == first_rung.readme_with(readme, outputs), "run `make docs`"


def test_the_rung_is_taken_as_a_user_would_see_it(outputs) -> None:
    codes = {key: code for key, (_, code) in outputs.items()}
    assert codes == dict.fromkeys(codes, 0)
    assert (
        "Promotion gate for stack prod (namespace inference, Ascend at 5%): PASSED"
        in (outputs["gate"][0])
    )
    assert "committed <commit-2> on branch dualstack/prod-ascend-20" in outputs["promote"][0]
    assert "Policies (dualstack-migration, previous weight 5%): 0 violations" in outputs["check"][0]
    assert "weight        20% Ascend, 80% NVIDIA" in outputs["after"][0]
    assert "```mermaid\nxychart-beta" in outputs[first_rung.REPORT][0]


def test_a_stale_readme_section_is_replaced_whole(outputs) -> None:
    stale = f"intro\n{first_rung.BEGIN}\nold output\n{first_rung.END_MARK}\nlinks\n"
    fresh = first_rung.readme_with(stale, outputs)
    assert "old output" not in fresh
    assert fresh.startswith(f"intro\n{first_rung.BEGIN}\n") and fresh.endswith("links\n")
    assert "$ dualstack status" in fresh


def test_the_readme_is_a_front_door_in_the_issues_order() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    headings = re.findall(r"^## (.+)$", readme, re.M)
    assert headings == [
        "Set-up: two commands",
        "Your first rung",
        "Coming from Argo Rollouts, Flagger, Kargo or plain Pulumi",
        "Read more",
    ]
    assert readme.index("```mermaid") < readme.index("## Set-up")
    set_up = readme.split("## Set-up: two commands\n", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^(make \w+)", set_up.split("```sh\n", 1)[1].split("```", 1)[0], re.M)
    assert commands == ["make preview", "make test"]
