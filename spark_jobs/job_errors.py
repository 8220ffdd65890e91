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
# An exception line as Python prints it: a class name with its module's (or a builtin
# exception's), then ": " and the message.
_EXCEPTION_LINE = re.compile(
    r"^(?:(?:[A-Za-z_]\w*\.)+[A-Z]\w*|[A-Za-z_]\w*(?:Error|Exception|Warning)): ")
# Spark's prefix before a message it wraps: `[ERROR_CLASS] Failed to ...: `.
_SPARK_PREFIX = re.compile(r"^\[[A-Z][A-Z0-9_.]*\] .*?: ")
# A JVM error of a failed job: the task's own failure follows the executor's name.
_LOST_TASK = re.compile(r"most recent failure: Lost task .*?\): (.+)")
_SQLSTATE = re.compile(r"(?:\s*SQLSTATE: \w+)+\s*$")


class SparkJobFailed(GazetteError):
    """Spark failed to plan or run a job; the message is the failure's one line."""


def failure_line(exc: BaseException) -> str:
    """The one line worth showing of a failed Spark call.

    In order: the first Python exception line in the text (after a traceback,
    or after Spark's `[ERROR_CLASS] ...: ` prefixes when tracebacks are
    hidden), a failed task's JVM error, the JVM exception the Py4J call
    raised, else the first line. Spark's `SQLSTATE` suffixes are dropped.
    """
    lines = str(exc).splitlines()
    line = (_python_line(lines) or _jvm_line(str(exc), lines)
            or next((text.strip() for text in lines if text.strip()), type(exc).__name__))
    return _SQLSTATE.sub("", line)


def _python_line(lines: list[str]) -> str:
    for line in lines:
        if not line or line[0].isspace():
            continue  # A traceback's frames, or a JVM stack.
        while prefix := _SPARK_PREFIX.match(line):
            line = line[prefix.end():]
        if _EXCEPTION_LINE.match(line) and not line.startswith("org.apache.spark."):
            return line.strip()
    return ""


def _jvm_line(text: str, lines: list[str]) -> str:
    if lost := _LOST_TASK.search(text):
        return lost.group(1).strip()
    # Py4J's text: "An error occurred while calling o1.x.", then ": <the JVM exception>".
    return next((line[2:].strip() for line in lines if line.startswith(": ")), "")


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
