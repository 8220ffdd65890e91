"""The JSON file store: state and checkpoint in one file, rebuilt exactly from its recording."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from gazette_core.consumer.store.checkpoint_json import checkpoint_to_json
from gazette_core.consumer.store.interface import Checkpoint
from gazette_core.consumer.store.json_file import (
    JSONFileStore,
    decode_state_file,
    encode_state_file,
)
from gazette_core.errors import ValidationError
from tests.consumer.store.mirror import MirrorRecording


def full_checkpoint(offset: int) -> Checkpoint:
    checkpoint = Checkpoint()
    source = checkpoint.sources["examples/input"]
    source.read_through = offset
    entry = source.producers.add()
    entry.id = b"\x01\x02\x03\x04\x05\x06"
    entry.state.last_ack = 2**63 + offset
    entry.state.begin = -1
    checkpoint.sources["examples/other"].read_through = 0
    checkpoint.ack_intents["examples/output"] = b"\x00ack"
    return checkpoint


def random_counts(state: dict[str, Any], rng: random.Random) -> None:
    """One transaction's worth of random word-count changes to `state`."""
    for _ in range(rng.randint(1, 4)):
        key = f"word-{rng.randrange(300)}"
        if rng.random() < 0.8:
            state[key] = state.get(key, 0) + rng.randrange(1, 9)
        else:
            state.pop(key, None)


async def test_random_commits_mirror_to_the_same_state_and_checkpoint(tmp_path: Path) -> None:
    mirror = MirrorRecording(tmp_path / "store", tmp_path / "mirror")
    store = await JSONFileStore.open(tmp_path / "store", mirror, initial_state={})
    rng = random.Random(7)
    for txn in range(1, 801):
        random_counts(store.state, rng)
        await store.start_commit(full_checkpoint(txn), None)
    assert sorted(p.name for p in (tmp_path / "mirror").iterdir()) == ["state.json"]
    assert (tmp_path / "mirror" / "state.json").read_bytes() == (
        tmp_path / "store" / "state.json"
    ).read_bytes()

    rebuilt = await JSONFileStore.open(
        tmp_path / "mirror", MirrorRecording(tmp_path / "mirror", tmp_path / "again")
    )
    assert rebuilt.state == store.state
    assert await rebuilt.restore_checkpoint() == full_checkpoint(800)
    await store.destroy()
    await rebuilt.destroy()
    mirror.close()
    assert not (tmp_path / "store").exists()


def test_checkpoint_json_is_go_encoding_json_of_the_generated_struct() -> None:
    want = (
        '{"sources":{"examples/input":{"read_through":5,"producers":[{"id":"AQIDBAUG",'
        '"state":{"last_ack":9223372036854775813,"begin":-1}}]},'
        '"examples/other":{"producers":null}},"ack_intents":{"examples/output":"AGFjaw=="}}'
    )
    got = json.dumps(checkpoint_to_json(full_checkpoint(5)), separators=(",", ":"))
    assert got == want
    assert json.dumps(checkpoint_to_json(Checkpoint())) == "{}"


def test_state_file_holds_three_documents_and_reads_legacy_two() -> None:
    content = encode_state_file({"a": 1}, full_checkpoint(5))
    lines = content.decode().splitlines()
    assert len(lines) == 3
    assert json.loads(lines[0]) == {"examples/input": 5, "examples/other": 0}
    assert decode_state_file(content) == ({"a": 1}, full_checkpoint(5))

    state, checkpoint = decode_state_file(b'{"examples/input":42}\n{"b":[1,2]}\n')
    assert state == {"b": [1, 2]}
    assert checkpoint.sources["examples/input"].read_through == 42
    with pytest.raises(ValidationError, match=r"state\.json"):
        decode_state_file(b'{"examples/input":42}\n')


async def test_commit_waits_for_wait_for_and_fails_with_it(tmp_path: Path) -> None:
    mirror = MirrorRecording(tmp_path / "store", tmp_path / "mirror")
    store = await JSONFileStore.open(tmp_path / "store", mirror, initial_state={"n": 0})
    await store.start_commit(full_checkpoint(1), None)
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    store.state["n"] = 1
    commit = store.start_commit(full_checkpoint(2), gate)
    for _ in range(20):
        await asyncio.sleep(0)
    assert (tmp_path / "store" / "state.json").exists()
    assert not commit.done()
    assert decode_state_file((tmp_path / "mirror" / "state.json").read_bytes())[0] == {"n": 0}
    gate.set_exception(RuntimeError("dependency append failed"))
    with pytest.raises(RuntimeError, match="dependency append failed"):
        await commit
    assert decode_state_file((tmp_path / "mirror" / "state.json").read_bytes())[0] == {"n": 0}
    await store.destroy()
    mirror.close()


async def test_a_leftover_next_file_from_a_failed_commit_is_replaced(tmp_path: Path) -> None:
    mirror = MirrorRecording(tmp_path / "store", tmp_path / "mirror")
    store = await JSONFileStore.open(tmp_path / "store", mirror, initial_state={"n": 1})
    leftover = store.files.open("next.json", create=True)
    leftover.write(b"x" * 10_000)  # longer than the real content, as a torn commit leaves
    leftover.close()
    await store.start_commit(full_checkpoint(3), None)
    assert sorted(p.name for p in (tmp_path / "mirror").iterdir()) == ["state.json"]
    assert decode_state_file((tmp_path / "mirror" / "state.json").read_bytes()) == (
        {"n": 1},
        full_checkpoint(3),
    )
    await store.destroy()
    mirror.close()
