"""`dualstack status`: where each stack (each service of a fleet) stands on the ladder, and
whether git matches reality."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from components import ladder
from components.settings import Fleet, Settings, SettingsError, load_fleet
from dualstack.cli import VERBS, examples
from dualstack.commands.arg_types import duration, moment, seconds
from dualstack.commands.gate_options import PROMETHEUS_ENV
from dualstack.commands.machine import add_output_argument, document, emit, wants_json
from dualstack.commands.stacks import add_service_argument, add_stack_argument, every_stack
from dualstack.errors import EXIT_ERROR, EXIT_OK, EXIT_PENDING, UsageError
from dualstack.gate.durations import parse_time, parse_window
from dualstack.gate.prometheus import PrometheusClient, PrometheusError, check_url
from dualstack.gate.promotion import traffic_status
from dualstack.pulumi_cli import Deployed, deployed_weight, deployed_weights
from dualstack.redaction import redact
from dualstack.repo.baseref import default_base
from dualstack.repo.stack_config import find_root, load_stack_config
from dualstack.repo.stackfile import StackFileError
from dualstack.step.pending import fleet_at, git_step
from dualstack.step.weights import ladder_text


def base_fleet(root: Path, stack: str, base: str | None) -> Fleet | None:
    """The stack's fleet at `base`; None without a base, when the stack file is absent there,
    or when it no longer validates (the preview judges such a base)."""
    return fleet_at(root, stack, base) if base is not None else None


def pending_step(
    root: Path,
    stack: str,
    settings: Settings,
    deployed: Deployed,
    base: str | None,
    at_base: Fleet | None = None,
) -> str | None:
    """Why a step of `settings`' service is pending (so `promote` would refuse), or None.

    Pending: the working tree's weight differs from the base's (`default_base`: the merge
    base with the default branch; `at_base` its fleet, read here when None), or the deployed
    weight (when known) differs from git. The same two checks `promote` makes before it
    writes anything. A service the base does not hold (a new one) has no base weight.
    """
    weight = settings.ascend_weight
    at_base = at_base if at_base is not None else base_fleet(root, stack, base)
    step = git_step(root, stack, settings, base, at_base)
    if step is not None:
        return f"{step.where}: {step.to_do}, or revert it"
    if deployed.weight is not None and deployed.weight != weight:
        return f"deployed {deployed.weight}%, git {weight}%: deploy the merged step, or revert it"
    return None


def service_status(
    settings: Settings, deployed: Deployed, pending: str | None = None
) -> dict[str, Any]:
    """One service's status as plain data (an element of a stack's `services`); `pending`
    from `pending_step`. `ladderPosition` reads like the stack output of the same name (`1/5`:
    step 1 of the ladder's 5 steps above 0); `drift` is True when the deployed weight is known
    and differs from git."""
    drift = deployed.weight is not None and deployed.weight != settings.ascend_weight
    return {
        "service": settings.name,
        "ascendWeight": settings.ascend_weight,
        "ladderPosition": ladder.position_text(settings.ladder, settings.ascend_weight),
        "nextStep": settings.next_step,
        "ascendImage": settings.ascend.image,
        "verifiedAscendImage": settings.verified_ascend_image,
        "ascendImageVerified": settings.ascend_image_verified,
        "deployedWeight": deployed.weight,
        "deployed": deployed.compare(settings.ascend_weight),
        "drift": drift,
        "pending": pending,
    }


def stack_status(
    stack: str, settings: Settings, deployed: Deployed, pending: str | None = None
) -> dict[str, Any]:
    """A single-service stack's status (an element of `-o json`'s `stacks`): its service's
    fields at the top, and `services` holding the same one service."""
    one = service_status(settings, deployed, pending)
    fields = {key: value for key, value in one.items() if key != "service"}
    return {"stack": stack, **fields, "ladder": list(settings.ladder), "services": [one]}


def fleet_status(stack: str, fleet: Fleet, services: list[dict[str, Any]]) -> dict[str, Any]:
    """A fleet stack's status: the shared ladder and one element per service (`services`);
    `drift` / `pending` true / set when any service's is."""
    pending = [f"{s['service']}: {s['pending']}" for s in services if s["pending"]]
    return {
        "stack": stack,
        "ladder": list(fleet.first.ladder),
        "drift": any(s["drift"] for s in services),
        "pending": "; ".join(pending) or None,
        "services": services,
    }


def exit_code(results: list[dict[str, Any]]) -> int:
    """2 when a stack's config is invalid, else 3 when one drifted or has a pending step,
    else 0 (an unknown deployed weight is neither: the output says why it is unknown)."""
    if any("error" in r for r in results):
        return EXIT_ERROR
    if any(r["drift"] or r["pending"] for r in results):
        return EXIT_PENDING
    return EXIT_OK


def format_status(status: dict[str, Any], settings: Settings) -> str:
    """The human block of one single-service stack."""
    stack, weight, step = status["stack"], status["ascendWeight"], status["nextStep"]
    if status.get("pending"):
        after = "none (the top of the ladder)" if step is None else f"{step}%"
        next_text = f"{after} after the pending step: {status['pending']}"
    elif step is None:
        next_text = "none: the migration is complete"
    else:
        next_text = f"{step}% (dualstack promote --stack {stack})"
    if status["ascendImageVerified"]:
        image = f"{status['ascendImage']} (precision-verified)"
    else:
        verified = status["verifiedAscendImage"] or "none recorded"
        image = f"{status['ascendImage']} (NOT verified; verified image: {verified})"
    rows = [
        ("weight", f"{weight}% Ascend, {100 - weight}% NVIDIA" + _mirror_text(settings)),
        ("ladder", f"{ladder_text(settings)} (step {status['ladderPosition']})"),
        ("next step", next_text),
        ("Ascend image", image),
        ("deployed", status["deployed"]),
        *_traffic_rows(status.get("traffic")),
    ]
    return "\n".join([stack, *(f"  {label:<13} {value}" for label, value in rows)]) + "\n"


FLEET_COLUMNS = ("service", "weight", "rung", "next rung", "verified", "deployed", "pending")
"""The columns of a fleet's status table."""


def _deployed_cell(service: dict[str, Any]) -> str:
    weight = service["deployedWeight"]
    if weight is None:
        return "unknown"
    return "in sync" if weight == service["ascendWeight"] else f"DIFFERS: {weight}%"


def format_fleet(status: dict[str, Any], fleet: Fleet) -> str:
    """The human block of a fleet stack: its ladder, then one row per service (weight, rung,
    next rung, verified, deployed, pending) and the reason a deployed weight is unknown."""
    rows = []
    for service in status["services"]:
        step = service["nextStep"]
        rows.append(
            (
                service["service"],
                f"{service['ascendWeight']}%",
                service["ladderPosition"],
                "complete" if step is None else f"{step}%",
                "yes" if service["ascendImageVerified"] else "NO",
                _deployed_cell(service),
                service["pending"] or "-",
            )
        )
    widths = [max(len(str(r[i])) for r in [FLEET_COLUMNS, *rows]) for i in range(6)]
    count = f"{len(rows)} service{'s' * (len(rows) != 1)}"
    lines = [f"{status['stack']}: {count}, ladder {ladder_text(fleet.first, -1)}"]
    for row in [FLEET_COLUMNS, *rows]:
        cells = [f"{value:<{width}}" for value, width in zip(row[:6], widths, strict=True)]
        lines.append(("  " + "  ".join([*cells, row[6]])).rstrip())
    unknown = [s for s in status["services"] if s["deployedWeight"] is None]
    notes = sorted({s["deployed"].removeprefix("unknown: ") for s in unknown})
    lines += [f"  deployed unknown: {note}" for note in notes]
    for service in status["services"]:
        rows = _traffic_rows(service.get("traffic"))
        lines += [f"  {service['service']} {label}: {value}" for label, value in rows]
    return "\n".join(lines) + "\n"


def _mirror_text(settings: Settings) -> str:
    return f", {settings.mirror_percent}% mirrored to Ascend" if settings.mirror_percent else ""


def _traffic_rows(traffic: dict[str, Any] | None) -> list[tuple[str, str]]:
    """`rung`, `split` and `bake` rows from `traffic_status` (or the error that prevented
    them). The rung row says when the recorded rung is not the stack file's, in the gate's
    words (`data taken at 5% Ascend; the stack file says 20%`): the split and bake below are
    then the recorded rung's, not the step git holds."""
    if traffic is None:
        return []
    if "error" in traffic:
        return [("split", f"unknown: {traffic['error']}")]
    split, bake = traffic["split"], traffic["bake"]
    recorded, in_file = traffic["rung"], traffic["stackFileRung"]
    if recorded is None:
        rung = f"not recorded by the deployed rules: judged at the stack file's {in_file}"
    elif traffic["rungDiffers"]:
        rung = (
            f"DIFFERS: data taken at {recorded} Ascend; the stack file says {in_file}: the step "
            f"is not deployed (deploy it, or revert it); the split and bake below are {recorded}'s"
        )
    else:
        rung = f"{recorded}, recorded by the deployed rules as the stack file says"
    rows = [
        ("rung", rung),
        ("split", f"{split['status']}: {split['detail']} (last {traffic['window']})"),
        ("bake", f"{bake['status']}: {bake['detail']}"),
    ]
    if "gate" in traffic:
        rows.append(("gate", traffic["gate"]))
    return rows


def _rung_drift(status: dict[str, Any], traffic: dict[str, Any] | None) -> None:
    """With `traffic` from Prometheus: a recorded rung that is not the stack file's is drift
    (exit 3), as a deployed weight that differs from git is."""
    if traffic is not None and traffic.get("rungDiffers"):
        status["drift"] = True


def observed_traffic(
    args: argparse.Namespace, settings: Settings, stack: str = ""
) -> dict[str, Any] | None:
    """`traffic_status` when a Prometheus is given (None without); its error as data when
    Prometheus cannot answer: status still shows everything else. Under `--watch` also the
    gate's verdict (`gate`: `PASSED`, or `FAILED: bake FAIL, split NO_DATA`)."""
    if not args.prometheus:
        return None
    try:
        client = PrometheusClient(check_url(args.prometheus), timeout=args.timeout)
        parse_window(args.window)
        at = parse_time(args.at) if args.at is not None else time.time()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        traffic = traffic_status(settings, client, args.window, at)
        if getattr(args, "watch", False):
            traffic["gate"] = _gate_verdict(settings, stack, client, args.window, at)
        return traffic
    except PrometheusError as exc:
        return {"error": str(exc)}


def _gate_verdict(
    settings: Settings, stack: str, client: PrometheusClient, window: str, at: float
) -> str:
    """The gate's verdict on `settings`' service now, in one line."""
    from dualstack.gate.promotion import evaluate_promotion

    report = evaluate_promotion(settings, stack, client, window, at)
    if report.passed:
        return f"PASSED (judged step {_step_text(report.step)})"
    unmet = [f"{c.key} {c.status}" for c in report.criteria if c.required and c.status != "PASS"]
    return f"FAILED: {', '.join(unmet)} (judged step {_step_text(report.step)})"


def _step_text(step: tuple[int, int | None] | None) -> str:
    if step is None:
        return "-"
    return f"{step[0]}% -> {'none' if step[1] is None else f'{step[1]}%'}"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status",
        help=VERBS["status"],
        epilog=examples(
            "dualstack status",
            "dualstack status -s prod --prometheus http://127.0.0.1:9090  # rung, split, bake",
            "dualstack status -s prod --prometheus http://127.0.0.1:9090 --watch  # until Ctrl-C",
            "dualstack status -o json | jq -r '.stacks[] | select(.drift) | .stack'  "
            "# exit 3: drift",
        ),
        description="For each Pulumi.<stack>.yaml: the Ascend weight, its place on the "
        "ladder, the next step, the verified Ascend image, and whether the deployed weight "
        "(asked from the Pulumi backend when the CLI is installed) differs from git; with "
        "--prometheus, the rung the deployed rules record (drift when it is not the stack "
        "file's), whether the split landed and how long the rung has held. A fleet "
        "stack (`services`) shows a table: service, weight, rung, next rung, verified, "
        "deployed, pending (--service NAME: that service only). While a step "
        "is pending (the working tree differs from the default branch, or the deployed weight "
        "from git) the next step says what to settle first. "
        "Exit 0 every stack in sync, 3 a deployed (or recorded) weight differs from git or a "
        "step is pending (a drift alarm), 2 a stack's config is invalid.",
    )
    add_stack_argument(parser, many=True)
    add_service_argument(parser)
    add_output_argument(parser, json_alias=True)
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        default=os.environ.get(PROMETHEUS_ENV),
        help="also compare the observed Ascend share with the recorded weight and show how "
        f"long the rung has held (default: ${PROMETHEUS_ENV}; none: not shown)",
    )
    parser.add_argument(
        "--window",
        type=duration,
        default="30m",
        help="observe the split over the last DURATION (default: 30m)",
    )
    parser.add_argument(
        "--at",
        metavar="TIME",
        type=moment,
        help="end of the window: unix seconds or RFC 3339 (default: now)",
    )
    parser.add_argument("--timeout", type=seconds, default=10.0, help="seconds per query")
    parser.add_argument(
        "--watch",
        action="store_true",
        help="draw the status again every --interval seconds until Ctrl-C (on a terminal it "
        "redraws in place); with --prometheus also each service's gate verdict",
    )
    parser.add_argument(
        "--interval",
        metavar="SECONDS",
        type=seconds,
        default=10.0,
        help="with --watch: seconds between two drawings (default: 10)",
    )
    parser.set_defaults(func=run)


def _one_stack(
    args: argparse.Namespace, root: Path, stack: str, base: str | None
) -> tuple[dict[str, Any], str]:
    """(the stack's status data, its human block); with --prometheus each service's observed
    split and bake (`traffic`). Raises SettingsError / StackFileError for a config that does
    not validate or an unknown `--service`."""
    service = args.service
    fleet = load_fleet(load_stack_config(root, stack))
    if service is not None:
        fleet.member(service)  # an unknown name: one line listing the services
    if not fleet.declared:
        settings = fleet.first
        deployed = deployed_weight(root, stack)
        pending = pending_step(root, stack, settings, deployed, base)
        status = stack_status(stack, settings, deployed, pending)
        traffic = observed_traffic(args, settings, stack)
        if traffic is not None:
            status["traffic"] = status["services"][0]["traffic"] = traffic
            _rung_drift(status, traffic)
            _rung_drift(status["services"][0], traffic)
        return status, format_status(status, settings)
    chosen = [fleet.member(service)] if service is not None else list(fleet)
    deployed = deployed_weights(root, stack, [s.name for s in chosen])
    at_base = base_fleet(root, stack, base)
    services = []
    for settings in chosen:
        pending = pending_step(root, stack, settings, deployed[settings.name], base, at_base)
        one = service_status(settings, deployed[settings.name], pending)
        traffic = observed_traffic(args, settings, stack)
        if traffic is not None:
            one["traffic"] = traffic
            _rung_drift(one, traffic)
        services.append(one)
    status = fleet_status(stack, fleet, services)
    return status, format_fleet(status, fleet)


def _snapshot(args: argparse.Namespace, root: Path) -> tuple[int, list[dict[str, Any]], str]:
    """(exit code, every stack's data, the text): one look at every stack. A stack whose
    config does not validate is an `error:` line, on stderr unless `--watch` draws it."""
    results, blocks = [], []
    base = default_base(root)
    for stack in every_stack(root, args.stack):
        try:
            status, block = _one_stack(args, root, stack, base)
        except (SettingsError, StackFileError) as exc:
            first = redact(str(exc).splitlines()[0])
            line = f"error: stack {stack}: {first}"
            if args.watch:
                blocks.append(line + "\n")
            else:
                print(line, file=sys.stderr)
            results.append({"stack": stack, "error": first})
            continue
        results.append(status)
        blocks.append(block)
    return exit_code(results), results, "\n".join(blocks)


def run(args: argparse.Namespace) -> int:
    root = find_root(Path(args.cwd) if args.cwd else None)
    if args.watch:
        if wants_json(args):
            raise UsageError(
                "--watch redraws the text for a person: leave out -o json (a script polls "
                "`status -o json`)"
            )
        if args.at is not None:
            raise UsageError("--watch follows the present: leave out --at")
        from dualstack.commands.redraw import watch

        def draw() -> tuple[int, str]:
            code, _results, text = _snapshot(args, root)
            return code, text

        return watch(draw, args.interval, "dualstack status")
    code, results, text = _snapshot(args, root)
    if wants_json(args):
        emit(document("status", exitCode=code, stacks=results))
    else:
        sys.stdout.write(text)
    return code
