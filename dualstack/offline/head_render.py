"""Rendering the head with the head's own code, read back as data (`preview --head DIR`).

When the pipeline runs the judge from a checkout of the base, the head is another tree: its
objects come from its own code (that is what `pulumi up` applies), run as `python -m dualstack
-C DIR render --stack S` with DIR alone on `PYTHONPATH` and DIR's virtualenv interpreter when
it has one. The judge reads the multi-document YAML it prints; nothing of the head is imported.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from dualstack.offline.child_process import Child
from dualstack.offline.judge_client import code_env, error_line
from dualstack.offline.protocol import JudgeError

RENDER_TIMEOUT_S = 300.0
"""Seconds the head's render may take."""

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def head_python(head_root: Path) -> str:
    """The head's interpreter: `DIR/.venv/bin/python` when present, else this one."""
    venv = head_root / ".venv" / "bin" / "python"
    return str(venv) if venv.is_file() else sys.executable


class HeadRender:
    """The head's render, started at once (`finish()` collects it)."""

    def __init__(self, head_root: Path, stack: str, python: str | None = None) -> None:
        self.head_root = head_root
        argv = [python or head_python(head_root), "-m", "dualstack", "-C", str(head_root)]
        self.child = Child([*argv, "render", "--stack", stack], head_root, code_env(head_root))

    def finish(self) -> list[dict[str, Any]]:
        """The head's objects. Raises JudgeError when its code cannot render it."""
        what = f"the head's render in {self.head_root}"
        try:
            code, out, err = self.child.finish(RENDER_TIMEOUT_S, what)
        finally:
            self.child.stop()
        if code != 0:
            raise JudgeError(f"{what} failed: {error_line(err)}")
        try:
            objects = [doc for doc in yaml.load_all(out, Loader=_Loader) if doc is not None]
        except yaml.YAMLError as exc:
            raise JudgeError(f"{what} printed no YAML objects: {exc}") from None
        if not all(isinstance(obj, dict) for obj in objects):
            raise JudgeError(f"{what} printed something other than Kubernetes objects")
        return objects
