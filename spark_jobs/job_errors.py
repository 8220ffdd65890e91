"""How a Spark job fails: the one line worth showing of a failed Spark call, and its exit code.

A Python exception raised where Spark runs our code (a data source's
planning in a Python worker, a task on an executor) reaches the caller
wrapped in a JVM error whose message holds the whole Python traceback. The
line a user needs is the exception's own (`ValidationError: option selector:
...`), which `failure_line` finds; `spark_call` raises it as a GazetteError.
A job's `main()` ends a failed run with `error_exit`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TypeVar

from gazette_core.errors import GazetteError
from spark_jobs.selection import NothingMatched

T = TypeVar("T")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Unknown|Fault|Matched): ")


class SparkJobFailed(GazetteError):
    """Spark failed to plan or run a job; the message is the failure's one line."""


def failure_line(exc: BaseException) -> str:
    """The Python exception line of the last traceback in `exc`, else its first line."""
    lines = str(exc).splitlines()
    after_traceback = False
    found = ""
    for line in lines:
        if "Traceback (most recent call last)" in line:
            after_traceback = True
        elif after_traceback and line and not line[0].isspace() and _EXCEPTION_LINE.match(line):
            found = found or line.strip()
    if found:
        return found
    return next((line.strip() for line in lines if line.strip()), type(exc).__name__)


def spark_call(call: Callable[[], T]) -> T:
    """`call()`, a failed Spark call raised as one line (SparkJobFailed)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        return call()
    except (PySparkException, Py4JError) as exc:
        raise SparkJobFailed(failure_line(exc)) from None


def error_exit(exc: GazetteError) -> int:
    """A job main()'s exit code for `exc`, said on stderr: 3 when nothing matched, else 1."""
    print(f"error: {exc}", file=sys.stderr)
    return 3 if isinstance(exc, NothingMatched) else 1
