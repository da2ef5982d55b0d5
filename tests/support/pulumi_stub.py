"""A stand-in `pulumi` executable for tests: the real CLI is not obtainable on these machines.

It logs its arguments, answers `stack output ascendWeight` with $FAKE_PULUMI_DEPLOYED and a
fleet's `stack output services` with $FAKE_PULUMI_SERVICES (JSON; or fails like a CLI without a
backend), and performs `config set` on the stack file only when
$FAKE_PULUMI_CONFIG is `ok` (else fails like a CLI that is not logged in); `wrong` writes the
value with a `0` appended (5 -> 50, 20 -> 200) and exits 0, like a CLI that mangled it.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest


def hide_pulumi(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drop every PATH entry holding a `pulumi` executable, so tests see "no CLI"."""
    entries = os.environ.get("PATH", "").split(os.pathsep)
    kept = [e for e in entries if not (e and (Path(e) / "pulumi").exists())]
    monkeypatch.setenv("PATH", os.pathsep.join(kept))


FAKE_PULUMI = """#!{python}
import os, pathlib, re, sys
args = sys.argv[1:]
with open(os.environ["FAKE_PULUMI_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
if args[:3] == ["stack", "output", "ascendWeight"]:
    answer = os.environ.get("FAKE_PULUMI_DEPLOYED")
    if answer is None:
        sys.exit("error: no Pulumi.yaml project file found / not logged in")
    print(answer)
elif args[:3] == ["stack", "output", "services"]:
    answer = os.environ.get("FAKE_PULUMI_SERVICES")
    if answer is None:
        sys.exit("error: current stack does not have output property 'services'")
    print(answer)
elif args[:2] == ["config", "set"] and os.environ.get("FAKE_PULUMI_CONFIG") in ("ok", "wrong"):
    key, value, stack = args[2], args[3], args[args.index("--stack") + 1]
    if os.environ["FAKE_PULUMI_CONFIG"] == "wrong":
        value += "0"
    path = pathlib.Path(f"Pulumi.{{stack}}.yaml")
    text = re.sub(rf'(:{{key}}: )"[^"]*"', rf'\\g<1>"{{value}}"', path.read_text())
    path.write_text(text)
else:
    sys.exit("error: failed to load checkpoint: backend not logged in")
"""


def install_fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the stand-in `pulumi` first on PATH; returns the file it logs its arguments to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pulumi"
    script.write_text(FAKE_PULUMI.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "pulumi.log"
    log.write_text("")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_PULUMI_LOG", str(log))
    return log
