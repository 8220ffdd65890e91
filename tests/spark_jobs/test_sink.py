"""`df.write.format("gazette")`, the exactly-once sink, against a real stack and local Spark.

Rows are read back with read_committed(), as consumers see them: each row
once, nothing before the job commits, nothing of a failed task attempt or an
aborted job. One stack and one Spark session (local[2,2]: two cores, a
failed task is tried again once) serve the module.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gazette_core.local import stack as local_stack
from gazette_core.local.stack import Stack
from spark_jobs.datasource import register
from spark_jobs.session import get_session, stop_session
from tests.gazctl.support import isolated_state_home, stop_stack
from tests.spark_jobs.sink_support import (
    CSV_TYPE,
    JSON_TYPE,
    apply_journals,
    committed,
    gate,
    wait_for,
    write_head,
)

P = "sink"
JOURNALS = {"json": JSON_TYPE, "csv": CSV_TYPE, "col-a": JSON_TYPE, "col-b": CSV_TYPE,
            "part-0": JSON_TYPE, "part-1": JSON_TYPE, "part-2": JSON_TYPE, "gated": JSON_TYPE,
            "retried": JSON_TYPE, "aborted": JSON_TYPE, "raw": "", "bad": JSON_TYPE}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    directory = tmp_path_factory.mktemp("sink-stack")
    with isolated_state_home(tmp_path_factory.mktemp("state")):
        try:
            yield local_stack.up(directory, timeout=60, activate=False)
        finally:
            stop_session()
            stop_stack(directory)


@pytest.fixture(scope="module")
def address(stack: Stack) -> str:
    address = stack.brokers[0].endpoint
    apply_journals(address, P, JOURNALS)
    return address


@pytest.fixture(scope="module")
def spark(stack: Stack) -> Any:
    session = get_session("local[2,2]", app_name="sink-test")
    register(session)
    return session


def write(df: Any, address: str, **options: str) -> None:
    df.write.format("gazette").mode("append").option("broker", address).options(
        **options).save()


def test_batch_write_is_read_back_once_as_json_and_csv(spark: Any, address: str) -> None:
    rows = [(i, f"text, \"{i}\"\nline", i % 2 == 0) for i in range(40)]
    df = spark.createDataFrame(rows, "n LONG, text STRING, even BOOLEAN").repartition(3)
    write(df, address, journal=f"{P}/json")
    write(df, address, journal=f"{P}/csv")
    docs = committed(address, f"{P}/json")
    assert sorted(docs, key=lambda d: d["n"]) == [
        {"n": n, "text": t, "even": e} for n, t, e in rows]
    fields = committed(address, f"{P}/csv")
    assert sorted(fields, key=lambda f: int(f[0])) == [
        [str(n), t, "true" if e else "false"] for n, t, e in rows]
