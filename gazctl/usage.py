"""gazctl's exit codes, and the errors that pick the codes other than 1.

The convention is written for users in docs/reference/conventions.md and
checked on every command by tests/gazctl/test_conventions.py.
"""

from __future__ import annotations

from gazette_core.errors import GazetteError, ValidationError

OK = 0
FAILED = 1  # the operation failed (a broker refused, a journal failed, an input file is bad)
USAGE = 2  # the command line is wrong; nothing was done
NOTHING = 3  # a selector matched nothing to act on, or nothing was done
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it


class UsageError(ValidationError):
    """A flag or argument is wrong; found before anything was read or sent."""

    exit_code = USAGE


class NothingDone(GazetteError):
    """The command ran, and none of what it was asked to do happened."""

    exit_code = NOTHING
