"""Secrets never printed: the one redaction, shared with the checker (`precision_check.redaction`,
standard library only, which owns the rule)."""

from precision_check.redaction import MASK, redact

__all__ = ["MASK", "redact"]
