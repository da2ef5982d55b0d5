"""The gate's own checks (key `gate`): webhooks the promotion gate calls before a step, as
Flagger's pre-rollout webhooks do, each a criterion of the gate (`dualstack.gate.webhooks`).

```yaml
dualstack-inference:gate:
  webhooks:
    - name: smoke                 # the criterion `webhook:smoke`
      url: https://smoke.example.com/run
      timeout: 30s                # at most 5m
      metadata: {suite: ascend}   # sent with the call
```
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, field_validator

from components.settings.base import ConfigModel
from components.settings.routing import DnsLabel, Duration, duration_seconds

MAX_WEBHOOK_SECONDS = 300
"""The longest a webhook may take: the gate waits for it."""
MAX_WEBHOOKS = 10


def _webhook_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise ValueError("must not carry user:password@ (it would show in messages)")
    return url


def _webhook_timeout(timeout: str) -> str:
    seconds = duration_seconds(timeout)
    if not 0 < seconds <= MAX_WEBHOOK_SECONDS:
        raise ValueError("must be more than 0s and at most 5m (the gate waits for it)")
    return timeout


class Webhook(ConfigModel):
    """One check the gate calls: `POST url` with the step as JSON; an HTTP 2xx answer within
    `timeout` passes, anything else fails (fail closed)."""

    name: DnsLabel = Field(description="Its criterion is `webhook:<name>`.")
    url: Annotated[str, AfterValidator(_webhook_url)] = Field(
        description="The endpoint the gate POSTs to (http or https, no user:password@)."
    )
    timeout: Annotated[Duration, AfterValidator(_webhook_timeout)] = Field(
        "30s", description="How long the gate waits for the answer, at most 5m."
    )
    metadata: dict[str, str] = Field(
        default_factory=dict, description="Sent with the call as `metadata`."
    )


class GateSettings(ConfigModel):
    """What the promotion gate runs besides its Prometheus criteria."""

    webhooks: tuple[Webhook, ...] = Field(
        (),
        max_length=MAX_WEBHOOKS,
        description="Pre-step checks (smoke or load tests) the gate calls, each a required "
        "criterion; at most 10, names unique.",
    )

    @field_validator("webhooks")
    @classmethod
    def _unique_names(cls, webhooks: tuple[Webhook, ...]) -> tuple[Webhook, ...]:
        names = [hook.name for hook in webhooks]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"webhook names must be unique: {', '.join(repeated)} repeated")
        return webhooks
