"""Executors' rows from fragments in GCS (emulator) and Azure (Azurite) stores as well as
files: one raw and one JSON-lines journal whose fragments are spread over all three, each
fragment with another codec, read without Spark (the executor half on its own)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.broker.codecs import compress
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.stores.registry import get_store
from gazette_core.message.uuid import Flags, build_uuid
from gazette_core.testing.azure import azurite_container
from gazette_core.testing.gcs import gcs_bucket
from spark_jobs.decode.content import JSON, RAW, JournalTask
from spark_jobs.source.range_read import journal_rows as task_rows

CODECS = [pb.GZIP, pb.ZSTANDARD, pb.SNAPPY]


@pytest.fixture(scope="module")
def cloud_stores() -> Iterator[tuple[str, str]]:
    """(GCS store URL, Azure store URL), their SDKs pointed at the emulators meanwhile."""
    with gcs_bucket() as gcs, azurite_container() as azure:
        yield gcs.store_url, azure.store_url


def _fragments(journal: str, pieces: list[bytes], stores: list[str], root: Path
               ) -> list[pb.Fragment]:
    out, begin = [], 0
    for data, store, codec in zip(pieces, stores, CODECS, strict=True):
        f = pb.Fragment(journal=journal, begin=begin, end=begin + len(data), mod_time=1,
                        backing_store=store, compression_codec=codec, sum=pb.SHA1Sum())
        asyncio.run(get_store(store, str(root)).put(f, compress(codec, data)))
        out.append(f)
        begin = f.end
    return out


def _task(journal: str, kind: str, fragments: list[pb.Fragment], root: Path) -> JournalTask:
    return JournalTask(journal, kind, tuple(f.SerializeToString() for f in fragments),
                       file_root=str(root))


def test_fragments_in_gcs_azure_and_files_read_back_whole(
        cloud_stores: tuple[str, str], tmp_path: Path) -> None:
    stores = ["file:///", *cloud_stores]
    raw = [f"piece {i} ".encode() * 50 for i in range(3)]
    lines = [json.dumps({"uuid": str(build_uuid(bytes(6 * [i + 1]), (100 + n) << 4,
                                                Flags.OUTSIDE_TXN)), "n": n}).encode() + b"\n"
             for i in range(3) for n in range(i * 10, i * 10 + 10)]
    messages = [b"".join(lines[i * 10:i * 10 + 10]) for i in range(3)]

    raw_rows = list(task_rows(_task("c/raw", RAW, _fragments("c/raw", raw, stores, tmp_path),
                                    tmp_path)))
    json_rows = list(task_rows(_task("c/json", JSON, _fragments("c/json", messages, stores,
                                                                tmp_path), tmp_path)))

    assert [data for _, _, data in raw_rows] == raw
    assert [offset for _, offset, _ in raw_rows] == [0, len(raw[0]), len(raw[0]) + len(raw[1])]
    assert [json.loads(row[4])["n"] for row in json_rows] == list(range(30))
    assert [row[1] for row in json_rows] == [sum(map(len, lines[:i])) for i in range(30)]
