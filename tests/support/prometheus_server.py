"""A real Prometheus server on 127.0.0.1 over backfilled synthetic history, for tests.

The cycle (REFERENCE.md, Prometheus 2.42): write OpenMetrics text with timestamps in SECONDS
ending in `# EOF`, `promtool tsdb create-blocks-from openmetrics FILE DIR`, start
`prometheus --storage.tsdb.path=DIR --web.listen-address=127.0.0.1:PORT`, poll `/-/ready`.
Queries must pass an explicit `time` inside the data: the server's clock is not the data's.

    series = [Series("up", {"job": "x"}, constant(1.0, start=T0, end=T1))]
    with prometheus_over(series, tmp_path) as url:
        ...  # query url + "/api/v1/query?query=up&time=<T1>"

Usable by any test module (gate, monitoring); it only needs `promtool` and `prometheus`
on PATH (`make tools`). Without them `require_prometheus()` skips, except under CI where it
fails, since there the tools are part of the contract.
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.bounded_process import spawn, stop

READY_TIMEOUT_S = 20.0
PROMTOOL_TIMEOUT_S = 60.0
EMPTY_CONFIG = "global:\n  evaluation_interval: 1m\nscrape_configs: []\n"


@dataclass(frozen=True)
class Series:
    """One series: metric name, labels and (unix seconds, value) samples in time order."""

    name: str
    labels: Mapping[str, str]
    samples: list[tuple[float, float]] = field(default_factory=list)


def constant(
    value: float, start: float, end: float, step: float = 60.0
) -> list[tuple[float, float]]:
    """Samples of one value every `step` seconds from `start` to `end` inclusive."""
    count = int((end - start) // step) + 1
    return [(start + i * step, value) for i in range(count)]


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    escaped = (
        f'{key}="{value.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for key, value in sorted(labels.items())
    )
    return "{" + ",".join(escaped) + "}"


def openmetrics(series: Iterable[Series]) -> str:
    """OpenMetrics text of `series`: one `# TYPE <name> gauge` per family, `# EOF` at the end.

    Samples of one family are written together (OpenMetrics requires it), timestamps in
    seconds. Raises ValueError when a series' samples are not in strictly rising time order
    (promtool would accept them and Prometheus could never return them).
    """
    families: dict[str, list[Series]] = {}
    for one in series:
        times = [t for t, _ in one.samples]
        if any(b <= a for a, b in itertools.pairwise(times)):
            raise ValueError(f"{one.name}{_labels(one.labels)}: samples out of time order")
        families.setdefault(one.name, []).append(one)
    lines = []
    for name, members in families.items():
        lines.append(f"# TYPE {name} gauge")
        for one in members:
            labels = _labels(one.labels)
            lines += [f"{name}{labels} {_number(v)} {t:.3f}" for t, v in one.samples]
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def require_prometheus() -> None:
    """Skip the calling test when promtool/prometheus are missing; under CI, fail instead."""
    missing = [tool for tool in ("promtool", "prometheus") if shutil.which(tool) is None]
    if missing:
        message = f"{', '.join(missing)} not installed (run `make tools`)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def create_blocks(series: Iterable[Series], workdir: Path) -> Path:
    """Backfill `series` into a fresh TSDB directory under `workdir`; returns that directory.

    Raises RuntimeError with promtool's output when the backfill fails.
    """
    source = workdir / "history.om"
    source.write_text(openmetrics(series), encoding="utf-8")
    tsdb = workdir / "tsdb"
    done = subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(tsdb)],
        capture_output=True,
        text=True,
        timeout=PROMTOOL_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise RuntimeError(f"promtool backfill failed: {done.stderr.strip() or done.stdout}")
    return tsdb


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=1.0) as answer:
            return answer.status == 200
    except OSError:
        return False


@contextmanager
def prometheus_server(
    tsdb: Path,
    workdir: Path,
    web_config: Path | None = None,
    ready: Callable[[str], bool] | None = None,
) -> Iterator[str]:
    """Run Prometheus on 127.0.0.1 (random port) over `tsdb`; yields its base URL.

    `web_config`: a `--web.config.file` (basic_auth_users, tls_server_config); then the URL
    is https:// when it has tls_server_config, and `ready(url)` must say how to reach
    `/-/ready` through it. Waits for readiness for at most READY_TIMEOUT_S and stops the
    server on exit. Raises RuntimeError, with the server's log, when it does not become ready.
    """
    config = workdir / "prometheus.yml"
    config.write_text(EMPTY_CONFIG, encoding="utf-8")
    log_path = workdir / "prometheus.log"
    address = f"127.0.0.1:{free_port()}"
    secured = web_config is not None and "tls_server_config" in web_config.read_text()
    url = f"{'https' if secured else 'http'}://{address}"
    extra = [f"--web.config.file={web_config}"] if web_config is not None else []
    with log_path.open("w", encoding="utf-8") as log:
        process = spawn(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={tsdb}",
                "--storage.tsdb.retention.time=100y",
                f"--web.listen-address={address}",
                "--log.level=warn",
                *extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while not (ready or _ready)(url):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"prometheus did not become ready at {url}:\n{log_path.read_text()}"
                    )
                time.sleep(0.05)
            yield url
        finally:
            stop(process)


@contextmanager
def prometheus_over(
    series: Iterable[Series],
    workdir: Path,
    web_config: Path | None = None,
    ready: Callable[[str], bool] | None = None,
) -> Iterator[str]:
    """Backfill `series` and serve them from a Prometheus on 127.0.0.1; yields its base URL
    (`web_config`, `ready`: see `prometheus_server`)."""
    require_prometheus()
    workdir.mkdir(parents=True, exist_ok=True)
    tsdb = create_blocks(series, workdir)
    with prometheus_server(tsdb, workdir, web_config, ready) as url:
        yield url
