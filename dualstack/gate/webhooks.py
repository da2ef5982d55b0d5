"""The gate's webhooks (`gate.webhooks`): pre-step smoke or load tests whose answer is a
criterion, as Flagger's pre-rollout and confirm-promotion webhooks are.

For each webhook the gate sends `POST <url>` with a JSON body (Flagger's payload fields, plus
the step): `{"name", "stack", "service", "namespace", "phase": "pre-step", "step": {"from",
"to"}, "metadata"}`. An HTTP 2xx answer within the webhook's `timeout` is PASS; anything else
is FAIL, fail closed: another status (its first line of body shown), no answer in time, a
refused connection, a redirect (never followed). The criterion is `webhook:<name>`, always
required. Bounded: at most `gate.webhooks`' 10 calls of at most 5m each, one after another,
and at most `MAX_BODY_BYTES` of an answer read. URLs are shown redacted (`token=***`).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from components.settings import Settings
from components.settings.gate import Webhook
from components.settings.routing import duration_seconds
from dualstack.gate.criteria import Criterion
from dualstack.redaction import redact

MAX_BODY_BYTES = 65536
"""The most of an answer read: its first line explains a failure."""
SHOWN_CHARS = 200


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def payload(hook: Webhook, settings: Settings, stack: str, step: tuple[int, int | None]) -> dict:
    """The JSON body of one call (module docstring)."""
    return {
        "name": hook.name,
        "stack": stack,
        "service": settings.member,
        "namespace": settings.namespace,
        "phase": "pre-step",
        "step": {"from": step[0], "to": step[1]},
        "metadata": dict(hook.metadata),
    }


def call(hook: Webhook, body: dict) -> tuple[bool, str, str]:
    """(passed, what the table shows, why): one bounded POST of `body` to `hook.url`."""
    seconds = duration_seconds(hook.timeout)
    where = redact(hook.url)
    request = urllib.request.Request(hook.url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=seconds) as response:
            status = response.status
            text = response.read(MAX_BODY_BYTES).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        text = exc.read(MAX_BODY_BYTES).decode("utf-8", "replace") if exc.fp else ""
        line = _first_line(text)
        if 300 <= exc.code < 400:
            why = f"HTTP {exc.code} from {where}: redirects are not followed (fail closed)"
        else:
            why = f"HTTP {exc.code} from {where}" + (f": {line}" if line else "")
        return False, f"HTTP {exc.code}", why
    except TimeoutError:
        return False, "no answer", f"no answer from {where} within {hook.timeout} (fail closed)"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            why = f"no answer from {where} within {hook.timeout} (fail closed)"
            return False, "no answer", why
        return False, "no answer", f"{where} unreachable: {redact(str(reason))} (fail closed)"
    line = _first_line(text)
    if 200 <= status < 300:
        return True, f"HTTP {status}", f"HTTP {status} from {where}" + (f": {line}" if line else "")
    return False, f"HTTP {status}", f"HTTP {status} from {where} (fail closed)"


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return redact(lines[0][:SHOWN_CHARS]) if lines else ""


def webhook_criteria(
    settings: Settings, stack: str, step: tuple[int, int | None] | None
) -> list[Criterion]:
    """One required criterion per `gate.webhooks` entry of `settings`, in order, each from
    its call (`call`). `step`: the step the gate judges, sent to the webhook."""
    judged = step if step is not None else (settings.ascend_weight, settings.next_step)
    criteria = []
    for hook in settings.gate.webhooks:
        passed, shown, why = call(hook, payload(hook, settings, stack, judged))
        criteria.append(
            Criterion(
                key=f"webhook:{hook.name}",
                title=f"Webhook {hook.name}",
                status="PASS" if passed else "FAIL",
                ascend=shown,
                nvidia="",
                threshold=f"HTTP 2xx within {hook.timeout}",
                detail=why,
            )
        )
    return criteria
