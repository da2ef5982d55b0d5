"""The names a service's objects take from its Service name (`service.name`), one rule each.

The settings check these names (a Service name short enough for its direct Services, no two
fleet members creating one object), and the components create the objects under them
(`components.naming.direct_service_name`, `components.precision.names`), so the rule is
written once, here, where both can import it.
"""

from __future__ import annotations

PRECISION_PREFIX_SERVICE_CHARS = 30
"""Characters of the Service name the precision check's names keep: with `-precision` and
the Job's hash they stay within the 63 characters of a Job name (its pods' `job-name` label)."""


def direct_service_name(service: str, hardware: str) -> str:
    """The Service that reaches one backend only, bypassing the split: `<service>-<hardware>`,
    e.g. `inference-service-ascend`."""
    return f"{service}-{hardware}"


def precision_prefix(service: str) -> str:
    """The prefix of the precision check's object names: the first 30 characters of the
    Service name, without a trailing `-`, then `-precision` (`inference-service-precision`)."""
    return service[:PRECISION_PREFIX_SERVICE_CHARS].rstrip("-") + "-precision"
