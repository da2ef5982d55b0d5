"""What a run leaves behind: the human summary and the Pushgateway metrics.

Pushgateway URL scheme (github.com/prometheus/pushgateway README, "URL"): `PUT
/metrics/job/<job>{/<label>/<value>}` replaces every series of that group; a `@base64`
suffix on a label name means its value is base64url-encoded, which lets image references
with `/` and `:` be grouping values.
"""

from __future__ import annotations

import base64
import http.client
import urllib.error
import urllib.request

from .backend import head
from .compare import Report
from .options import EXIT_PASS, HARDWARE, CheckError

# The series this check pushes (components/metric_names.py holds the same names).
PASSED = "precision_check_passed"
COMPLETED = "precision_check_completed"
MATCH_RATIO = "precision_check_match_ratio"
MISMATCHES = "precision_check_mismatches"
PROMPTS = "precision_check_prompts"
DURATION = "precision_check_duration_seconds"
SHOWN = 10
"""Mismatches the summary lists; the JSON report has all of them."""


def format_summary(report: Report) -> str:
    """The human summary: verdict, both backends, every mismatch with both snippets."""
    options = report.options
    lines = [
        f"precision check {report.status.upper()}: {report.matched}/{report.prompts} prompts "
        f"match in {options.mode} mode ({report.match_rate:.1f} %, need "
        f"{options.min_match_rate:g} %)"
    ]
    for hw in HARDWARE:
        image = getattr(options, f"{hw}_image")
        lines.append(
            f"  {hw:<6} {getattr(options, hw)}{f' ({image})' if image else ''}: "
            f"{report.answered.get(hw, 0)} answers, {report.retries.get(hw, 0)} retries"
        )
    lines.append(
        f"  {report.duration:.2f} s, up to {options.concurrency} requests in flight per backend"
    )
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


def metrics_text(report: Report) -> str:
    """Prometheus text format (0.0.4) of the result; every series carries the labels
    `ascend_image`, `nvidia_image` (when known) and `mode`. All are gauges."""
    options = report.options
    labels = {
        "ascend_image": options.ascend_image,
        "nvidia_image": options.nvidia_image,
        "mode": options.mode,
    }
    selector = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items() if v)
    series = (
        (
            PASSED,
            "1 when Ascend answered like NVIDIA within the threshold, else 0.",
            int(report.exit_code == EXIT_PASS),
        ),
        (COMPLETED, "1 when both backends answered every prompt, else 0.", int(not report.errors)),
        (MATCH_RATIO, "Prompts answered alike / all prompts (0..1).", report.match_rate / 100),
        (MISMATCHES, "Prompts answered differently.", len(report.mismatches)),
        (PROMPTS, "Prompts sent to each backend.", report.prompts),
        (DURATION, "Wall time of the check in seconds.", round(report.duration, 3)),
    )
    return "".join(
        f"# HELP {name} {text}\n# TYPE {name} gauge\n{name}{{{selector}}} {value}\n"
        for name, text, value in series
    )


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

    Raises CheckError when the gateway cannot be reached or does not answer 2xx.
    """
    options = report.options
    url = group_url(options.pushgateway, options.push_job, options.push_labels)
    request = urllib.request.Request(
        url,
        metrics_text(report).encode(),
        {"Content-Type": "text/plain; version=0.0.4"},
        method="PUT",
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=min(options.timeout, 30.0)) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        raise CheckError(f"push to {url}: HTTP {exc.code}: {head(exc.read())}") from None
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise CheckError(f"push to {url}: {getattr(reason, 'strerror', None) or reason}") from None
    return url
