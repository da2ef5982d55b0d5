"""Red team, class 3: files nobody listed are code too.

The program used to be a list of paths (`Pulumi.yaml`, `components/`, ...); any other file of
a pull request was neither an envelope change nor code-owned, and did not even trigger a
preview. Yet a root-level `sitecustomize.py` is imported by the head's render (the head's tree
is first on its PYTHONPATH), a module named like a library shadows it there and in `pulumi up`
(the project folder is first on `sys.path`), and a committed `.venv/bin/python` IS the head's
render. Each head below fakes its render to show the base's weight while its stack file jumps
5 -> 100; the base's judge, run from the base checkout as the pipelines do, must refuse it.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from dualstack.repo.changes import stacks_touched, tree_changes
from dualstack.repo.stackfile import set_config_values
from tests.conftest import git
from tests.support.judge_repos import commit, failed_policies, make_repo, run_base

ENVELOPE = "safety-envelope-unchanged"

FAKE_RENDER = """
import dualstack.repo.stackfile as _stackfile

_read = _stackfile.read_config


def _at_the_base_weight(root, stack):
    return {**_read(root, stack), "dualstack-inference:ascendWeight": "5"}


_stackfile.read_config = _at_the_base_weight
"""
"""A `sitecustomize.py` that makes the head's render show prod at 5 whatever its file says."""


@pytest.fixture
def repo(tmp_path):
    """The fixture repo, `base-checkout` a worktree of main, the pull request on branch `pr`."""
    repo = make_repo(tmp_path)
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "base-checkout"), "main")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


def judge_from_the_base(repo, *argv: str) -> subprocess.CompletedProcess[str]:
    return run_base(repo.parent / "base-checkout", *argv, "--stack", "prod", "--head", str(repo))


def jump_with(repo, path: str, text: str, mode: int = 0o644) -> None:
    """Commit the pull request: `path` with `text`, prod 5 -> 100."""
    file = repo / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    file.chmod(mode)
    set_config_values(repo, "prod", {"ascendWeight": "100"})
    git(repo, "add", "-f", path)
    commit(repo, "the pull request")


def test_a_sitecustomize_that_fakes_the_render_is_an_envelope_change(repo):
    jump_with(repo, "sitecustomize.py", FAKE_RENDER)
    done = judge_from_the_base(repo, "preview")
    assert done.returncode == 1, done.stdout + done.stderr
    # the faked render fools every other policy (where no system sitecustomize shadows it)
    assert ENVELOPE in failed_policies(done.stderr)
    assert "  file sitecustomize.py: absent -> added" in done.stdout
    assert "Ascend weight: 5% -> 100%" in done.stdout  # the base reads the head's file itself


def test_a_committed_interpreter_is_an_envelope_change(repo):
    render = run_base(repo.parent / "base-checkout", "render", "--stack", "prod")
    assert render.returncode == 0, render.stderr
    (repo / ".venv").mkdir()
    (repo / ".venv" / "render.yaml").write_text(render.stdout, encoding="utf-8")
    script = '#!/bin/sh\ncat "$(dirname "$0")/../render.yaml"\n'
    jump_with(repo, ".venv/bin/python", script, 0o755)
    git(repo, "add", "-f", ".venv")
    commit(repo, "the rendered objects of the base")
    done = judge_from_the_base(repo, "preview")
    assert done.returncode == 1, done.stdout + done.stderr
    assert failed_policies(done.stderr) == {ENVELOPE}
    assert "  file .venv/bin/python: absent -> added" in done.stdout
    assert "  file .venv/render.yaml: absent -> added" in done.stdout


def test_the_deploy_s_policy_config_lists_an_unlisted_file(repo, tmp_path):
    jump_with(repo, "yaml.py", "from json import *\n")
    out = tmp_path / "policy-config.json"
    done = judge_from_the_base(
        repo, "policy-config", "--previous-weight", "5", "--output", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())[ENVELOPE]["envelopeChanges"] == [
        {"fact": "yaml.py", "before": "absent", "after": "added", "kind": "file"}
    ]


@pytest.mark.parametrize(
    "path",
    [
        "sitecustomize.py",
        "usercustomize.py",
        "conftest.py",
        "yaml.py",
        "pulumi_kubernetes/__init__.py",
        ".venv/bin/python",
        ".venv/lib/python3.11/site-packages/zz.pth",
        ".python-version",
        ".gitignore",
        ".gitattributes",
    ],
)
def test_a_file_nobody_listed_touches_every_stack(path):
    found = stacks_touched([path], ("staging", "prod"))
    assert found.stacks == ("staging", "prod"), path
    assert found.reason == f"the program changed ({path}): every stack"


def test_docs_tests_and_examples_still_touch_no_stack():
    paths = ["README.md", "docs/ARCHITECTURE.md", "tests/x.py", "examples/service-repo/a.yml"]
    assert stacks_touched(paths, ("staging", "prod")).stacks == ()
    assert stacks_touched(["docs/CODEOWNERS"], ("prod",)).stacks == ("prod",)


def test_the_pipelines_base_checkout_inside_the_head_is_no_change(tmp_path):
    """The pipelines check the base out as `base-checkout/` inside the head's clone: a worktree
    of the same repository, not a file of the pull request. Another repository there is."""
    repo = make_repo(tmp_path)
    git(repo, "worktree", "add", "-q", "--detach", str(repo / "base-checkout"), "main")
    other = repo / "vendored"
    other.mkdir()
    git(other, "init", "-q")
    set_config_values(repo, "prod", {"ascendWeight": "20"})
    found = tree_changes(repo, "main")
    assert found == {"Pulumi.prod.yaml": "M", "vendored/": "A"}
