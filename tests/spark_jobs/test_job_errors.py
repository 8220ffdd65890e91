"""`failure_line`: the one line of a failed Spark call, from texts captured from real runs.

failure_texts.json holds `str(exc)` of exceptions PySpark 4.3 raised against a
local stack (paths shortened, JVM stacks cut), each with Spark's
`hideTraceback` conf off ("false") and on ("true"): a bad option at planning,
a record decoded from a non-boundary offset in a task, a streaming query
failed on lost content (`[STREAM_FAILED]`), and a JVM error of a task.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_jobs.job_errors import failure_line

TEXTS: dict[str, str] = json.loads(
    (Path(__file__).with_name("failure_texts.json")).read_text())


class Captured(Exception):
    """Stands for the PySpark exception whose text was captured."""


OPTION = ("gazette_core.errors.ValidationError: option startingoffset: unknown option of a "
          "read; known: selector, ")
DECODE = ("gazette_core.message.chunk_decode.MessageDecodeError: exp/json offset 5: cannot "
          "decode message: ")
LOSS = ("spark_jobs.source.stream_reader.DataLoss: journal exp/json: offsets [0, 1456) were "
        "removed from the stores before the query read them")
JVM = ("java.lang.IllegalArgumentException: not all nodes, buffers and variadicBufferCounts "
       "were consumed.")


EXPECTED = {"option": OPTION, "nonboundary": DECODE, "streamloss": LOSS, "dupcol": JVM}


@pytest.mark.parametrize("hidden", ["false", "true"])
@pytest.mark.parametrize("case", list(EXPECTED))
def test_the_line_of_each_captured_failure(case: str, hidden: str) -> None:
    expected = EXPECTED[case]
    line = failure_line(Captured(TEXTS[f"{case}/{hidden}"]))

    assert line.startswith(expected), line
    assert "\n" not in line
    assert "SQLSTATE" not in line


def test_a_text_with_no_exception_line_gives_its_first_line() -> None:
    assert failure_line(Captured("\n  something odd happened\nmore")) == "something odd happened"
    assert failure_line(Captured("")) == "Captured"
