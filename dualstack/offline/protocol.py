"""The judge protocol's version and error, apart from the judge so that starting one is cheap.

`dualstack.offline.judge` is the protocol (request and response shapes, the base's side);
`dualstack.offline.judge_client` starts a base's judge before the caller imports anything
heavy (the program, pulumi), so the base renders while the head's process is still loading.
This module imports nothing.
"""

PROTOCOL = 1
"""Version of the request and response shapes; a base that speaks another one cannot judge."""

BASE_WEIGHT = "base"
"""`previous_weight` meaning "the weight of the base's stack config" (the offline preview)."""


class JudgeError(RuntimeError):
    """The base cannot judge the head (fail closed: exit 2, never a first deploy)."""
