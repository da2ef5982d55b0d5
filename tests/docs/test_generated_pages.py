"""The generated reference pages (dualstack/docs_gen.py) are what the code gives today: a policy
description, a settings field or a CLI flag changed without `make docs` fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualstack import docs_gen
from tests.conftest import REPO


def test_every_generated_page_is_up_to_date() -> None:
    assert docs_gen.stale(REPO) == [], "run `make docs` and commit docs/reference/"


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """A tree holding the pages as `make docs` writes them."""
    assert docs_gen.main(["--root", str(tmp_path)]) == 0
    assert docs_gen.stale(tmp_path) == []
    return tmp_path


def test_a_changed_policy_description_makes_the_policy_page_stale(written, monkeypatch):
    from policies import POLICIES

    policy = next(p for p in POLICIES if p.name == "no-unsafe-weight-jump")
    monkeypatch.setattr(policy, "description", "Any jump is fine.")
    assert docs_gen.stale(written) == ["docs/reference/policies.md"]
    assert docs_gen.main(["--root", str(written), "--check"]) == 1


def test_a_changed_settings_field_makes_the_configuration_page_stale(written, monkeypatch):
    from components.settings.model import CapacitySettings

    field = CapacitySettings.model_fields["headroom"]
    monkeypatch.setattr(field, "description", "A new meaning.")
    assert docs_gen.stale(written) == ["docs/reference/configuration.md"]


def test_a_new_cli_flag_makes_the_cli_page_stale(written, monkeypatch):
    from dualstack.commands import status

    register = status.register

    def with_a_flag(subparsers):
        register(subparsers)
        subparsers.choices["status"].add_argument("--colour", help="a flag the page lacks")

    monkeypatch.setattr(status, "register", with_a_flag)
    assert docs_gen.stale(written) == ["docs/reference/cli.md"]


def test_the_pages_name_what_a_reader_looks_up(written) -> None:
    pages = {path: (written / path).read_text() for path in docs_gen.PAGES}
    config = pages["docs/reference/configuration.md"]
    assert "| `capacity.headroom` | number | `1.2` | >= 1.0; <= 3.0 | inherited, per member |" in (
        config
    )
    assert (
        "| `ladder` | list of integer | `[0, 5, 20, 50, 80, 100]` |  | once per stack |" in config
    )
    assert "| `ascend.pool.name` | string | `ascend` |" in config  # the Ascend pool's own default
    policies = pages["docs/reference/policies.md"]
    assert "| `images-pinned-by-digest` | advisory | resource |" in policies
    assert "## `dualstack ci rollback-targets`" in pages["docs/reference/cli.md"]
    monitoring = pages["docs/reference/monitoring.md"]
    assert "| `AscendErrorRatioAboveNvidia` | 5m | critical |" in monitoring
    assert (
        "| `hardware:accelerator_hours:sum24h` | `dualstack.inference.usage` | 5m |" in monitoring
    )
