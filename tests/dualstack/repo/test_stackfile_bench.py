"""Benchmark of bounded input: a 556-byte stack file of nested YAML aliases as `ladder`.

Issue 12 measured the same shape on main at 27 s and 1.27 GB, with 52 MB of stderr: every
alias was expanded into the settings and echoed in the error. Now the read stops at
`MAX_VALUES` values. Target: refused within 0.5 s, in-process (`make bench` prints it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from dualstack.repo.stackfile import StackFileError, read_config
from tests.dualstack.test_bad_input import _alias_bomb

TARGET_S = 0.5


@pytest.mark.benchmark(group="bounded-input")
def test_alias_bomb_is_refused_fast(benchmark, tmp_path: Path) -> None:
    (tmp_path / "Pulumi.bomb.yaml").write_text(_alias_bomb(), encoding="utf-8")

    times: list[float] = []

    def refuse() -> str:
        started = time.perf_counter()
        with pytest.raises(StackFileError) as caught:
            read_config(tmp_path, "bomb")
        times.append(time.perf_counter() - started)
        return str(caught.value)

    message = benchmark.pedantic(refuse, rounds=5, iterations=1)
    elapsed = sum(times) / len(times)
    assert "expands to more than 100000 values" in message
    figures = {"file_bytes": len(_alias_bomb()), "mean_s": round(elapsed, 3), "target_s": TARGET_S}
    figures["target_met"] = elapsed <= TARGET_S
    print("\nalias-bomb benchmark:", json.dumps(figures))
