"""Bad flag values against the CLI, one table per flag kind (issue 34): every duration, time
and seconds bound goes through one strict parser (`dualstack.commands.arg_types`), so each
of these is refused by argparse in one line, exit 2, before anything is read or sent. The
class is wrong acceptances (and, for `inf`/`nan`/`1e300` bounds, tracebacks before)."""

from __future__ import annotations

import pytest

from dualstack.cli import main

BAD_DURATIONS = [
    "30m30m",
    "３０m",
    " 30m ",
    "30m1h",
    "1h1h",
    "30",
    "m",
    "",
    "030m",
    "30 m",
    "+30m",
    "-30m",
    "1.5h",
    "30M",
    "30min",
    "1e2s",
    "٣٠m",
    "30m\n",
    "1_0m",
    "5ms30s",
    "1d2w",
    "inf",
    "nan",
    "30mm",
]
BAD_TIMES = [
    "2024-W18-3T12:00:00Z",
    "2024-05-01T12:00:00",
    "2024-05-01",
    "2024-05-01 12:00:00Z",
    "2024-125T12:00:00Z",
    "20240501T120000Z",
    " 1700000000",
    "1700000000 ",
    "+1700000000",
    "-1",
    "01700000000",
    "1e9",
    "inf",
    "nan",
    "1_700_000_000",
    "１７００００００００",
    "now",
    "2024-05-01T12:00:00.Z",
    "2024-05-01T12:00:00+0200",
    "2024-05-01T12:00Z",
]
BAD_SECONDS = ["0", "-1", "inf", "nan", "1e300", " 5", "5 ", "+5", "05", "0.0", "1_0", "٥"]
BAD_SECONDS += ["Infinity", "", "100000", ".5"]

GATE = ["gate", "--stack", "prod", "--prometheus", "http://127.0.0.1:9"]
STATUS = ["status", "--stack", "prod"]
CASES = [
    *((GATE, "--window", v) for v in BAD_DURATIONS),
    *((GATE, "--max-staleness", v) for v in BAD_DURATIONS[:12]),
    *((STATUS, "--window", v) for v in BAD_DURATIONS[:12]),
    *((GATE, "--at", v) for v in BAD_TIMES),
    *((STATUS, "--at", v) for v in BAD_TIMES[:10]),
    *((GATE, "--timeout", v) for v in BAD_SECONDS),
    *((STATUS, "--timeout", v) for v in BAD_SECONDS),
    *((["rollback", "--stack", "prod"], "--to", v) for v in ["-1", "+1", "01", " 1", "1.0"]),
]


@pytest.mark.parametrize(
    ("command", "flag", "value"),
    CASES,
    ids=[f"{c[0]}{flag}={value!r}" for c, flag, value in CASES],
)
def test_wrong_acceptance_cli_flag(tmp_path, capsys, command, flag, value):
    code = main(["-C", str(tmp_path), *command, flag, value])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    last = err.splitlines()[-1]
    assert last.startswith(f"error: {command[0]}: argument {flag}: "), err


@pytest.mark.parametrize("value", ["30m", "1h30m", "2h", "7d", "1d12h", "45m30s"])
def test_durations_in_unit_order_are_read(value):
    from dualstack.commands.arg_types import duration

    assert duration(value) == value


@pytest.mark.parametrize(
    "value", ["1700000000", "1700000000.25", "2024-05-01T12:00:00Z", "2024-05-01T14:00:00+02:00"]
)
def test_unix_seconds_and_rfc3339_are_read(value):
    from dualstack.commands.arg_types import moment

    assert moment(value) == value
