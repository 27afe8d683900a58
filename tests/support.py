"""Helpers the per-module test files share (not a test file: pytest collects nothing here).

`refused` checks an API call's bad-input error: its type, that the message is short and that it names what was
wrong. The CLI's equivalent (exit 2, one or two lines on stderr) lives with the CLI tests and the fuzz suites.
"""

from __future__ import annotations

import pytest

from rooflab.errors import InputError

#: A message fits one or two terminal lines; the fuzz suite allows 4,000 characters, this is the intent.
SHORT = 400
#: An integer past every limit rooflab sets (and past int64).
HUGE = 10**60


def refused(call, *names: str, error: type = InputError) -> str:
    """Run `call`; it must raise `error` whose short message names each of `names` (case-insensitive)."""
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert len(message) <= SHORT, f"a message of {len(message):,} characters"
    for name in names:
        assert name.lower() in message.lower(), f"{name!r} not in: {message}"
    return message
