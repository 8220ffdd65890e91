"""`read_journals` and `gazctl journals export` against a real stack whose journals persist to
files and to S3 (the stack's moto emulator), with every codec, both message framings and raw
journals: what they return equals what `gazctl journals read` returns, committed messages only.

One stack and one Spark session (local mode) serve the module; data is small.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gazette_core.local.stack import Stack
from gazette_core.testing.etcd import free_port
from spark_jobs import frame_export
from spark_jobs.journals_frame import read_journals
from spark_jobs.selection import list_selection
from spark_jobs.source.frame_plan import plan_frame
from spark_jobs.source.range_read import journal_rows as task_rows
from tests.gazctl.support import ok, one_error_line, run_main
from tests.spark_jobs.frames_support import (
    JOURNALS,
    Written,
    expected_rows,
    fragments,
    populate,
    s3_session,
    s3_stack,
)

P = "frames"
MESSAGE_COLUMNS = ["journal", "offset", "uuid", "producer", "n", "text"]
# Inferred from the documents, whose own "journal" field does not clash with the column's.
JSON_COLUMNS = ["journal", "offset", "uuid", "producer", "doc_journal", "n", "text"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with s3_stack(tmp_path_factory, "frames-stack") as stack:
        yield stack


@pytest.fixture(scope="module")
def address(stack: Stack) -> str:
    return stack.brokers[0].endpoint


@pytest.fixture(scope="module")
def written(stack: Stack, address: str) -> dict[str, Written]:
    assert stack.s3_store is not None
    return populate(address, P, stack.s3_store)


@pytest.fixture(scope="module")
def spark(stack: Stack) -> Any:
    return s3_session("local[*]", "frames-test")


def root(stack: Stack) -> str:
    return str(stack.directory / "fragments")


def journals_of(kind: str) -> list[str]:
    return [f"{P}/{name}" for name, k, _, _ in JOURNALS if k == kind]


def message_rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in df.collect())


def test_journals_persist_to_files_and_s3(
        address: str, written: dict[str, Written]) -> None:
    stores = {name: {f.backing_store.split(":")[0] for f in fragments(address, f"{P}/{name}")
                     if f.mod_time} for name, _, _, _ in JOURNALS}
    assert stores == {name: {"s3" if s3 else "file"} for name, _, _, s3 in JOURNALS}


def test_json_lines_of_every_codec_are_the_committed_messages_read(
        spark: Any, stack: Stack, address: str, written: dict[str, Written]) -> None:
    df = read_journals(spark, f"suite={P}, kind=json", broker=address, file_root=root(stack))

    assert df.columns == JSON_COLUMNS
    got = message_rows(df)
    expected = sorted(row for j in journals_of("json")
                      for row in expected_rows(address, j, "json", written[j]))
    assert got == expected
    # Pending, rolled-back and duplicate messages and ACKs were in what `read` returned.
    assert len(got) < sum(written[j].records for j in journals_of("json"))
    assert len(got) == sum(len(written[j].committed) for j in journals_of("json"))


def test_csv_with_a_schema_gives_typed_columns_and_the_broker_comes_from_the_environment(
        spark: Any, stack: Stack, address: str, written: dict[str, Written],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROKER_ADDRESS", address)
    monkeypatch.setenv("BROKER_FILE_ROOT", root(stack))

    df = read_journals(spark, f"suite={P}, kind=csv", schema="n LONG, text STRING")

    assert df.columns == MESSAGE_COLUMNS
    assert dict(df.dtypes)["n"] == "bigint"
    expected = sorted(row for j in journals_of("csv")
                      for row in expected_rows(address, j, "csv", written[j]))
    assert message_rows(df) == expected


def test_raw_journals_are_their_bytes_and_persisted_only_stops_at_the_spool(
        spark: Any, stack: Stack, address: str, written: dict[str, Written]) -> None:
    everything = read_journals(spark, f"suite={P}, kind=raw", broker=address,
                               file_root=root(stack))
    persisted = read_journals(spark, f"suite={P}, kind=raw", broker=address,
                              file_root=root(stack), unpersisted=False)

    assert everything.columns == ["journal", "offset", "data"]
    for journal in journals_of("raw"):
        read = ok("journals", "read", "-l", f"name={journal}", "--broker.address",
                  address).stdout_bytes
        spool = fragments(address, journal)[-1]
        for df, upto in ((everything, len(read)), (persisted, spool.begin)):
            rows = sorted((r.offset, bytes(r.data)) for r in df.collect()
                          if r.journal == journal)
            assert b"".join(data for _, data in rows) == read[:upto]
            assert [o for o, _ in rows] == sorted({o for o, _ in rows})  # no overlaps


def test_a_small_ring_replays_from_the_stores_with_the_same_result(
        stack: Stack, address: str, written: dict[str, Written]) -> None:
    journal = f"{P}/json/offload"  # on S3
    plan = plan_frame(list_selection(address, f"name={journal}"), broker=address,
                      file_root=root(stack))
    (task,) = plan.tasks

    tiny = list(task_rows(type(task)(**{**task.__dict__, "ring_size": 1})))

    assert tiny == list(task_rows(task))
    assert [(j, o, u, p) for j, o, u, p, _ in tiny] == [
        row[:4] for row in expected_rows(address, journal, "json", written[journal])]


def test_export_parquet_and_csv_files_hold_the_same_rows(
        spark: Any, stack: Stack, address: str, written: dict[str, Written],
        tmp_path: Path) -> None:
    expected = sorted(row for j in journals_of("json")
                      for row in expected_rows(address, j, "json", written[j]))

    result = ok("journals", "export", "-l", f"suite={P}, kind=json", "--to",
                str(tmp_path / "pq"), "--broker.address", address, "--file-root", root(stack))
    as_csv = ok("journals", "export", "-l", f"suite={P}, kind=json", "--to",
                str(tmp_path / "csv"), "--format", "csv", "--schema", "n LONG, text STRING",
                "--broker.address", address, "--file-root", root(stack))

    count = len(expected)
    assert result.stdout == (f"exported {count} rows of 5 journals (json) to {tmp_path / 'pq'} "
                             "as parquet\n")
    assert as_csv.stdout.startswith(f"exported {count} rows of 5 journals (json)")
    assert message_rows(spark.read.parquet(str(tmp_path / "pq"))) == expected
    from_csv = spark.read.option("header", "true").option("multiLine", "true").schema(
        "journal STRING, offset LONG, uuid STRING, producer STRING, n LONG, text STRING"
    ).csv(str(tmp_path / "csv"))
    # The schema given names n and text only: the documents' journal field is left out.
    assert message_rows(from_csv) == [row[:4] + row[5:] for row in expected]


def test_export_json_of_raw_journals_holds_their_bytes(
        spark: Any, stack: Stack, address: str, written: dict[str, Written],
        tmp_path: Path) -> None:
    journal = journals_of("raw")[1]  # on S3
    read = ok("journals", "read", "-l", f"name={journal}", "--broker.address",
              address).stdout_bytes

    ok("journals", "export", "-l", f"name={journal}", "--to", str(tmp_path / "raw"),
       "--format", "json", "--since", "1h", "--broker.address", address)

    docs = [json.loads(line) for part in sorted((tmp_path / "raw").glob("part-*"))
            for line in part.read_text().splitlines()]
    rows = sorted((d["offset"], base64.b64decode(d["data"])) for d in docs)
    assert b"".join(data for _, data in rows) == read


def test_export_refusals_are_one_line_and_write_nothing(
        stack: Stack, address: str, written: dict[str, Written], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    common = ["--broker.address", address, "--file-root", root(stack)]

    raw_csv = run_main(capsys, "journals", "export", "-l", f"suite={P}, kind=raw", "--to",
                       str(tmp_path / "out"), "--format", "csv", *common)
    full = run_main(capsys, "journals", "export", "-l", f"suite={P}", "--to",
                    str(tmp_path / "full"), *common)
    mixed = run_main(capsys, "journals", "export", "-l", f"suite={P}", "--to",
                     str(tmp_path / "mixed"), *common)
    nothing = run_main(capsys, "journals", "export", "-l", "suite=no-such", "--to",
                       str(tmp_path / "none"), *common)

    assert raw_csv[0] == 2 and "CSV cannot" in one_error_line(raw_csv[2])
    assert full[0] == 2 and "is not empty" in one_error_line(full[2])
    assert mixed[0] == 1
    assert one_error_line(mixed[2]) == (
        f"error: invalid input: --selector: the journals do not share one framing: "
        f"{P}/csv/gzip is csv, {P}/json/gzip is json, {P}/raw/none is raw; select journals "
        "of one content-type")
    assert nothing == (3, "", "error: no journals match 'suite=no-such'\n")
    assert not any((tmp_path / name).exists() for name in ("out", "mixed", "none"))


def test_a_fragment_missing_from_its_store_fails_the_export_with_one_line(
        spark: Any, address: str, written: dict[str, Written], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = tmp_path / "not-the-file-root"
    elsewhere.mkdir()

    code, out, err = run_main(capsys, "journals", "export", "-l", f"name={P}/raw/none",
                              "--to", str(tmp_path / "out"), "--broker.address", address,
                              "--file-root", str(elsewhere))

    assert (code, out) == (1, "")
    line = one_error_line(err)
    assert line.startswith("error: export failed: gazette_core.broker.stores.base."
                           "StoreNotFoundError: file store 'file:///': open ")
    assert f"{elsewhere}/{P}/raw/none/0000000000000000-" in line


def test_the_export_job_runs_on_its_own_and_prints_a_json_summary(
        spark: Any, stack: Stack, address: str, written: dict[str, Written], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    journal = journals_of("csv")[0]

    code = frame_export.main(["--broker.address", address, "-l", f"name={journal}",
                              "--to", str(tmp_path / "out"), "--format", "json",
                              "--file-root", root(stack)])

    rows = len(written[journal].committed)
    assert (code, capsys.readouterr().out) == (
        0, f'{{"kind":"csv","format":"json","journals":1,"rows":{rows}}}\n')
    docs = [json.loads(line) for part in (tmp_path / "out").glob("part-*")
            for line in part.read_text().splitlines()]
    assert sorted((d["journal"], d["offset"], d["uuid"]) for d in docs) == [
        row[:3] for row in expected_rows(address, journal, "csv", written[journal])]


def test_an_unreachable_spark_master_is_one_line_with_a_hint(
        stack: Stack, address: str, written: dict[str, Written], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Last in the module: asking for another master stops the module's session.
    master = f"spark://127.0.0.1:{free_port()}"

    code, out, err = run_main(capsys, "journals", "export", "-l", f"name={P}/raw/none",
                              "--to", str(tmp_path / "out"), "--spark-master", master,
                              "--broker.address", address, "--file-root", root(stack))

    assert (code, out) == (1, "")
    line = one_error_line(err)
    assert line.startswith(f"error: cannot reach the Spark master at {master}: ")
    assert line.endswith("(start the master, or export in this process with --spark-master "
                         "local[*])")
