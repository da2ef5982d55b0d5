"""How the checker quotes a response body it cannot use, in its one-line errors."""

from __future__ import annotations

from precision_check.shapes import head


def test_head_quotes_the_first_80_characters_and_replaces_bad_bytes():
    body = b"\xff<html>" + b"x" * 100
    assert head(body) == repr("\ufffd<html>" + "x" * 73)
    assert head(b"") == "''"
