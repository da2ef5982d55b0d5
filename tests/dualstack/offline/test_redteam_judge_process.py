"""Red team, class 3: the head's files must not reach the process that judges.

`dualstack preview --base REF` run from the head (`make preview` is `python -m dualstack
preview` in the head's folder, so that folder is first on `sys.path`) judges in-process when
its packages are the base's, else in a worktree of REF. A root-level `pulumi_policy.py` in the
head, a shadow that loads the real library and then makes every policy a no-op, must never be
imported by the judge: not in-process, and not by the worktree's judge through a PYTHONPATH
the caller had (the suite's `run_head` puts the head there, as a developer may).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dualstack.repo.stackfile import set_config_values
from tests.support.judge_repos import failed_policies, make_repo, run_head

ENVELOPE = "safety-envelope-unchanged"
WORKTREE = "Judged by the base's code and facts (this checkout)"  # the base's own CLI

SHADOW = """
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_path = list(sys.path)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
del sys.modules[__name__]
import pulumi_policy as _real  # noqa: E402

sys.path[:] = _path


def _silent(cls):
    class Silent(cls):
        def __init__(self, *args, **kwargs):
            kwargs["validate"] = lambda *a, **k: None
            super().__init__(*args, **kwargs)

    Silent.__name__ = cls.__name__
    return Silent


_real.StackValidationPolicy = _silent(_real.StackValidationPolicy)
_real.ResourceValidationPolicy = _silent(_real.ResourceValidationPolicy)
sys.modules[__name__] = _real
"""
"""A root-level `pulumi_policy.py` that silences every policy of whoever imports it."""


@pytest.fixture
def repo(tmp_path):
    repo = make_repo(tmp_path)
    (repo / "pulumi_policy.py").write_text(SHADOW, encoding="utf-8")
    set_config_values(repo, "prod", {"ascendWeight": "100"})
    return repo


def make_preview(repo, *args: str) -> subprocess.CompletedProcess[str]:
    """`make preview`'s way: `python -m dualstack preview` in the head's folder, no PYTHONPATH."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "dualstack", "preview", "--stack", "prod", "--base", "main", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_shadow_module_in_the_head_sends_the_judge_to_a_worktree(repo):
    done = make_preview(repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert WORKTREE in done.stdout
    assert failed_policies(done.stderr) == {ENVELOPE, "no-unsafe-weight-jump"}
    assert "  file pulumi_policy.py: absent -> added" in done.stdout


def test_the_worktree_judge_does_not_inherit_the_head_on_pythonpath(repo):
    """An approved program edit rides with the shadow: the worktree's judge must still refuse
    the raise that comes with it, so the head's folder is not on its PYTHONPATH."""
    errors = repo / "dualstack" / "errors.py"
    errors.write_text(errors.read_text(encoding="utf-8") + "\n# approved\n", encoding="utf-8")
    done = run_head(repo, "preview", "--stack", "prod", "--base", "main", "--owner-approved")
    assert done.returncode == 1, done.stdout + done.stderr
    assert WORKTREE in done.stdout
    assert failed_policies(done.stderr) == {ENVELOPE, "no-unsafe-weight-jump"}
    assert "the same pull request raises the Ascend weight from 5% to 100%" in done.stderr
