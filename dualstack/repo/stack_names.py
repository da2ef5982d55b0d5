"""The names of stacks and of their files, `Pulumi.<stack>.yaml`: the rule alone.

Standard library only, so what merely sorts paths (`dualstack.repo.changes`, and through it the
judge client that `dualstack preview` starts before anything heavy) loads neither the stack-file
reader (ruamel.yaml) nor the settings (pydantic). Reading and editing the files is
`dualstack.repo.stackfile`'s, and so is `stacks(root)`, which stacks a project holds.
"""

from __future__ import annotations

import re

STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
"""A stack's own name (Pulumi: alphanumerics, hyphens, underscores and periods)."""
STACK_FILE = re.compile(r"Pulumi\.(?P<stack>[A-Za-z0-9_.-]{1,100})\.yaml")
"""A stack file's name, `Pulumi.<stack>.yaml`, at the project's root. Only `.yaml` counts: the
Pulumi CLI looks for `Pulumi.<stack>` with its project file's extension (pkg/workspace
`DetectProjectStackPath`), and the project file here is `Pulumi.yaml`; a `Pulumi.dev.yml`
beside it is not a stack Pulumi would deploy, so it is none of ours either (a change to it is
a change to the program, `dualstack.repo.changes.touches_program`: fail closed)."""


def stack_of(path: str) -> str | None:
    """The stack a repo-relative path configures, or None: `Pulumi.prod.yaml` -> `prod`;
    `Pulumi.yaml` (the project), `Pulumi.dev.yml`, `sub/Pulumi.prod.yaml` -> None."""
    match = STACK_FILE.fullmatch(path)
    if match is None or match["stack"] in (".", ".."):
        return None
    return match["stack"]
