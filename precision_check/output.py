"""What a run leaves behind: the human summary and the Pushgateway metrics.

Pushgateway URL scheme (github.com/prometheus/pushgateway README, "URL"): `PUT
/metrics/job/<job>{/<label>/<value>}` replaces every series of that group; a `@base64`
suffix on a label name means its value is base64url-encoded, which lets image references
with `/` and `:` be grouping values.
"""

from __future__ import annotations

import base64
import http.client
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from .limits import DeadlineHandler, DeadlineHTTPSHandler
from .options import EXIT_PASS, HARDWARE, CheckError
from .report import Report
from .shapes import head

# The series this check pushes (components/monitoring/metric_names.py holds the first six).
PASSED = "precision_check_passed"
COMPLETED = "precision_check_completed"
MATCH_RATIO = "precision_check_match_ratio"
MISMATCHES = "precision_check_mismatches"
PROMPTS = "precision_check_prompts"
DURATION = "precision_check_duration_seconds"
INCONCLUSIVE = "precision_check_inconclusive"
DIVERGED = "precision_check_diverged"
WITHIN_MATCH_RATIO = "precision_check_within_match_ratio"
ACCURACY = "precision_check_accuracy_ratio"
ACCURACY_LOWER = "precision_check_accuracy_lower_ratio"
ACCURACY_UPPER = "precision_check_accuracy_upper_ratio"
PUSH_TIMEOUT = 30.0
"""Seconds the push may take at most (less with a smaller `--timeout`)."""
PUSH_ANSWER_BYTES = 4096
"""The most of the gateway's answer read (it answers an empty body)."""
SHOWN = 10
"""Mismatches the summary lists; the JSON report has all of them."""
EXAMPLES = 3
"""Tolerated divergences and differing repeats the summary lists."""


def headline(report: Report) -> str:
    """The verdict line: `precision check PASS: 24/24 prompts match in exact mode (...)`."""
    options, status = report.options, report.status.upper()
    if options.mode == "accuracy" and not (report.accuracy and report.compared):
        return (
            f"precision check {status}: {report.compared}/{report.prompts} items scored in "
            "accuracy mode"
        )
    if report.accuracy is not None:
        acc = report.accuracy
        sides = ", ".join(
            f"{hw} {acc.rate(hw):.1f} % [{acc.interval(hw)[0]:.1f}, {acc.interval(hw)[1]:.1f}]"
            for hw in HARDWARE
        )
        return (
            f"precision check {status}: accuracy {sides} on {acc.items} items in accuracy "
            f"mode (Wilson 95 %; tolerance {acc.tolerance:g} points)"
        )
    unit = "prompts" if options.runs == 1 else f"answer pairs ({options.runs} runs)"
    return (
        f"precision check {status}: {report.matched}/{report.pairs} {unit} match in "
        f"{options.mode} mode ({report.match_rate:.1f} %, need {options.min_match_rate:g} %)"
    )


def format_summary(report: Report) -> str:
    """The human summary: verdict, both backends, the mode's numbers, the reasons not to
    pass, every mismatch (up to `SHOWN`) with both snippets, the first errors."""
    options = report.options
    lines = [headline(report)]
    for hw in HARDWARE:
        image = getattr(options, f"{hw}_image")
        lines.append(
            f"  {hw:<6} {getattr(options, hw)}{f' ({image})' if image else ''}: "
            f"{report.answered.get(hw, 0)} answers, {report.retries.get(hw, 0)} retries"
        )
    lines.append(
        f"  {report.duration:.2f} s, up to {options.concurrency} requests in flight per backend"
    )
    if options.mode == "topk":
        lines.append(
            f"  {len(report.divergences)} pairs diverged within the top-{options.top_k} (tolerated)"
        )
        lines += [f"  diverged {m.prompt_id} ({m.detail})" for m in report.divergences[:EXAMPLES]]
    if report.baseline is not None:
        base = report.baseline
        lines.append(
            f"  baseline: nvidia agrees with itself on {base.rate('nvidia'):.1f} %, ascend on "
            f"{base.rate('ascend'):.1f} %, across hardware {report.match_rate:.1f} % "
            f"(margin {base.margin:g} points)"
        )
        lines += [
            f"  repeat {r.hardware} {r.prompt_id} at {r.unit} {r.position} ({r.detail})"
            for r in base.repeats[:EXAMPLES]
        ]
    if report.accuracy is not None and report.compared:
        lines.append(f"  {report.accuracy.reason}")
    lines += [f"  fail: {reason}" for reason in report.reasons if report.accuracy is None]
    for m in report.mismatches[:SHOWN]:
        lines += [
            f"  mismatch {m.prompt_id} at {m.unit} {m.position} ({m.detail}): {m.prompt!r}",
            f"    nvidia: {m.nvidia!r}",
            f"    ascend: {m.ascend!r}",
        ]
    if len(report.mismatches) > SHOWN:
        lines.append(f"  ... {len(report.mismatches) - SHOWN} more mismatches (see --json)")
    lines += [f"  error: {error}" for error in report.errors[:1]]
    if len(report.errors) > 1:
        lines.append(f"  ... {len(report.errors) - 1} more errors (see --json)")
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


Sample = tuple[str, str, dict[str, str], float]
"""One pushed sample: (metric name, help text, labels of its own, value)."""


def _per_backend(name: str, help_text: str, value: Callable[[str], float]) -> list[Sample]:
    return [(name, help_text, {"hardware": hw}, round(value(hw), 5)) for hw in HARDWARE]


def series(report: Report) -> list[Sample]:
    """Every pushed sample, grouped by metric name. The mode's own numbers come only in
    that mode: `diverged` in topk, the per-backend same-hardware agreement with the
    baseline, the per-backend accuracy and its Wilson 95 % bounds in accuracy mode."""
    passed = int(report.exit_code == EXIT_PASS)
    samples: list[Sample] = [
        (PASSED, "1 when Ascend answered like NVIDIA within the threshold, else 0.", {}, passed),
        (
            COMPLETED,
            "1 when both backends answered every prompt, else 0.",
            {},
            int(not report.errors),
        ),
        (
            MATCH_RATIO,
            "Answer pairs answered alike / all pairs (0..1).",
            {},
            report.match_rate / 100,
        ),
        (MISMATCHES, "Answer pairs answered differently.", {}, len(report.mismatches)),
        (PROMPTS, "Prompts sent to each backend in each run.", {}, report.prompts),
        (DURATION, "Wall time of the check in seconds.", {}, round(report.duration, 3)),
        (
            INCONCLUSIVE,
            "1 when the accuracy mode could not tell, else 0.",
            {},
            int(report.inconclusive),
        ),
    ]
    if report.options.mode == "topk":
        diverged = len(report.divergences)
        samples.append((DIVERGED, "Answer pairs that diverged within the top-k.", {}, diverged))
    if report.baseline is not None:
        rate = report.baseline.rate
        text = "Prompts a backend answered alike twice / prompts (0..1)."
        samples += _per_backend(WITHIN_MATCH_RATIO, text, lambda hw: rate(hw) / 100)
    if report.accuracy is not None:
        acc = report.accuracy
        samples += _per_backend(
            ACCURACY, "Items answered right / items (0..1).", lambda hw: acc.rate(hw) / 100
        )
        samples += _per_backend(
            ACCURACY_LOWER,
            "Lower Wilson 95 % bound of the accuracy (0..1).",
            lambda hw: acc.interval(hw)[0] / 100,
        )
        samples += _per_backend(
            ACCURACY_UPPER,
            "Upper Wilson 95 % bound of the accuracy (0..1).",
            lambda hw: acc.interval(hw)[1] / 100,
        )
    return samples


def metrics_text(report: Report) -> str:
    """Prometheus text format (0.0.4) of the result; every series carries the labels
    `ascend_image`, `nvidia_image` (when known) and `mode`, per-backend series `hardware`
    too. All are gauges."""
    options = report.options
    labels = {
        "ascend_image": options.ascend_image,
        "nvidia_image": options.nvidia_image,
        "mode": options.mode,
    }
    text, described = [], set()
    for name, help_text, extra, value in series(report):
        if name not in described:
            described.add(name)
            text.append(f"# HELP {name} {help_text}\n# TYPE {name} gauge\n")
        merged = {**labels, **extra}
        selector = ",".join(f'{k}="{_escape(v)}"' for k, v in merged.items() if v)
        text.append(f"{name}{{{selector}}} {value}\n")
    return "".join(text)


def group_url(gateway: str, job: str, labels: tuple[str, ...]) -> str:
    """`<gateway>/metrics/job@base64/<job>{/<label>@base64/<value>}` for `KEY=VALUE` labels."""
    pairs = [("job", job), *(tuple(label.split("=", 1)) for label in labels)]
    path = "".join(
        f"/{key}@base64/{base64.urlsafe_b64encode(value.encode()).decode()}" for key, value in pairs
    )
    return gateway.rstrip("/") + "/metrics" + path


def push_metrics(report: Report) -> str:
    """PUT `metrics_text(report)` to the Pushgateway group of `push_job` and `push_labels`,
    replacing the group's previous result. Returns the group URL.

    The whole push ends within `min(timeout, PUSH_TIMEOUT)` seconds; at most
    `PUSH_ANSWER_BYTES` of the gateway's answer are read. Raises CheckError when the gateway
    cannot be reached, does not answer 2xx or not in time.
    """
    options = report.options
    url = group_url(options.pushgateway, options.push_job, options.push_labels)
    request = urllib.request.Request(
        url,
        metrics_text(report).encode(),
        {"Content-Type": "text/plain; version=0.0.4"},
        method="PUT",
    )
    handlers = (urllib.request.ProxyHandler({}), DeadlineHandler(), DeadlineHTTPSHandler())
    opener = urllib.request.build_opener(*handlers)
    seconds = min(options.timeout, PUSH_TIMEOUT)
    request.deadline = time.monotonic() + seconds  # type: ignore[attr-defined]
    try:
        with opener.open(request, timeout=seconds) as response:
            response.read(PUSH_ANSWER_BYTES)
    except urllib.error.HTTPError as exc:
        try:
            detail = head(exc.read(PUSH_ANSWER_BYTES))
        except (OSError, http.client.HTTPException):
            detail = "(no body within the deadline)"
        raise CheckError(f"push to {url}: HTTP {exc.code}: {detail}") from None
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise CheckError(f"push to {url}: {getattr(reason, 'strerror', None) or reason}") from None
    return url
