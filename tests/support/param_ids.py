"""Parametrize ids that stay the same from one pytest session to the next.

pytest escapes an id's backslashes and non-ASCII characters, and in a second session of the
same process (mutmut's fork server collects once, then runs each mutant's tests by id) it
escapes the ids it already escaped once more: `'\\xb2'` becomes `'\\\\xb2'`, the test is not
found and mutmut counts the mutant a timeout (`tests/mutation/test_mutation_selection.py`). An
id from `plain` is printable ASCII without a backslash, so escaping leaves it alone.
"""

from __future__ import annotations


def plain(value: object) -> str:
    """`value` as a test id: a string quoted as `repr` would, any other value its `repr`; every
    character outside printable ASCII, and the backslash, as `<U+XXXX>` (`'²'` ->
    `'<U+00B2>'`, `'5\\n'` -> `'5<U+000A>'`)."""
    text = f"'{value}'" if isinstance(value, str) else repr(value)
    return "".join(
        c if c.isascii() and c.isprintable() and c != "\\" else f"<U+{ord(c):04X}>" for c in text
    )
