"""FragmentIndex: local commits, store refreshes, read queries and change wake-ups."""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path

from gazette_core.broker.fragment.cover_set import IndexEntry
from gazette_core.broker.fragment.index import FragmentIndex
from gazette_core.broker.fragment.spool import Spool
from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol.fragment_ext import sha1_to_sum

JOURNAL = "a/journal"
STORE = "file:///store/"
HOURS = 60 * 60


def _remote(begin: int, end: int, mod_time: int) -> pb.Fragment:
    return pb.Fragment(
        journal=JOURNAL, begin=begin, end=end, sum=sha1_to_sum(bytes(20)),
        compression_codec=pb.GZIP, backing_store=STORE, mod_time=mod_time,
    )


def _commit(spool: Spool, content: bytes) -> pb.Fragment:
    spool.apply(pb.ReplicateRequest(content=content, content_delta=0))
    spool.apply(pb.ReplicateRequest(proposal=spool.proposal_with_delta()))
    return spool.fragment


def _local_spool_at(tmp_path: Path, offset: int) -> Spool:
    spool = Spool(JOURNAL, str(tmp_path))
    spool.apply(pb.ReplicateRequest(proposal=spool.roll_proposal(offset, pb.NONE)))
    return spool


def _spans(index: FragmentIndex) -> list[tuple[int, int, bool]]:
    return [(e.fragment.begin, e.fragment.end, e.local is not None) for e in index.entries()]


def test_local_commits_grow_one_entry(tmp_path: Path) -> None:
    index = FragmentIndex()
    spool = Spool(JOURNAL, str(tmp_path))
    index.add_local(_commit(spool, b"hello "), spool)
    index.add_local(_commit(spool, b"world"), spool)
    assert index.entries() == [
        IndexEntry(
            pb.Fragment(journal=JOURNAL, begin=0, end=11,
                        sum=sha1_to_sum(hashlib.sha1(b"hello world").digest()),
                        compression_codec=pb.NONE),
            spool.file,
        )
    ]
    assert (index.begin_offset, index.end_offset) == (0, 11)


def test_refresh_drops_locals_covered_by_contiguous_remotes(tmp_path: Path) -> None:
    index = FragmentIndex()
    first = Spool(JOURNAL, str(tmp_path))
    index.add_local(_commit(first, b"x" * 100), first)
    second = _local_spool_at(tmp_path, 100)
    index.add_local(_commit(second, b"y" * 100), second)
    assert not index.first_refresh_done

    now = int(time.time())
    index.replace_remote([_remote(0, 60, now), _remote(60, 150, now)])
    assert index.first_refresh_done
    # [0,100) is covered by two contiguous remote fragments; [100,200) only in part.
    assert _spans(index) == [(0, 60, False), (60, 150, False), (100, 200, True)]

    index.replace_remote([_remote(0, 60, now), _remote(60, 150, now), _remote(150, 200, now)])
    assert _spans(index) == [(0, 60, False), (60, 150, False), (150, 200, False)]


def test_add_remote_supersedes_local_copy(tmp_path: Path) -> None:
    index = FragmentIndex()
    spool = Spool(JOURNAL, str(tmp_path))
    index.add_local(_commit(spool, b"z" * 10), spool)
    index.add_remote(_remote(0, 10, int(time.time())))
    assert _spans(index) == [(0, 10, False)]
    assert not index.first_refresh_done


def test_query_end_offset_and_longest_covering(tmp_path: Path) -> None:
    index = FragmentIndex()
    now = int(time.time())
    index.replace_remote([_remote(0, 100, now), _remote(50, 200, now)])
    assert index.query(-1) == (None, 200)
    assert index.query(10) == (IndexEntry(_remote(0, 100, now)), 10)
    assert index.query(60) == (IndexEntry(_remote(50, 200, now)), 60)
    assert index.query(200) == (None, 200)


def test_query_jumps_to_first_persisted_fragment() -> None:
    index = FragmentIndex()
    now = int(time.time())
    index.replace_remote([_remote(1000, 2000, now)])
    assert index.query(0) == (IndexEntry(_remote(1000, 2000, now)), 1000)


def test_query_jumps_gap_only_to_old_persisted_fragment() -> None:
    index = FragmentIndex()
    now = int(time.time())
    old, young = now - 7 * HOURS, now - 5 * HOURS
    index.replace_remote([_remote(0, 100, now), _remote(200, 300, old)])
    assert index.query(150) == (IndexEntry(_remote(200, 300, old)), 200)

    index.replace_remote([_remote(0, 100, now), _remote(200, 300, young)])
    assert index.query(150) == (None, 150)


def test_query_never_jumps_to_local_fragment_above_unlisted_content(tmp_path: Path) -> None:
    # A replica that joined the route at 500: [0, 500) may still be in another's spool.
    index = FragmentIndex()
    spool = _local_spool_at(tmp_path, 500)
    index.add_local(_commit(spool, b"local"), spool)
    index.replace_remote([])
    assert index.query(0) == (None, 0)

    index.replace_remote([_remote(0, 400, int(time.time()))])  # [400, 500) is still unlisted
    index.replace_remote([])
    assert index.query(0) == (None, 0)


def test_query_jumps_to_local_first_fragment_once_listed_content_below_is_gone(
        tmp_path: Path) -> None:
    index = FragmentIndex()
    spool = _local_spool_at(tmp_path, 500)
    entry = IndexEntry(_commit(spool, b"local"), spool.file)
    index.add_local(entry.fragment, spool)
    index.replace_remote([_remote(0, 200, 1), _remote(200, 500, 1)])
    assert index.query(0)[1] == 0

    index.replace_remote([_remote(200, 500, 1)])  # [0, 200) pruned: jump to the first
    assert index.query(0)[1] == 200
    index.replace_remote([])  # all persisted content pruned: the spool is what is left
    assert index.query(0) == (entry, 500)
    assert index.query(499) == (entry, 500)


def test_query_never_jumps_across_a_gap_to_a_local_fragment(tmp_path: Path) -> None:
    index = FragmentIndex()
    spool = _local_spool_at(tmp_path, 500)
    index.add_local(_commit(spool, b"local"), spool)
    now = int(time.time())
    index.replace_remote([_remote(0, 200, now), _remote(200, 500, now)])
    index.replace_remote([_remote(0, 200, now)])  # [200, 500) lost in the middle
    assert index.query(300) == (None, 300)


def test_query_skips_fragments_older_than_begin_mod_time() -> None:
    index = FragmentIndex()
    index.replace_remote([_remote(0, 100, 1000), _remote(100, 200, 2000), _remote(200, 300, 3000)])
    assert index.query(10, begin_mod_time=2500) == (IndexEntry(_remote(200, 300, 3000)), 200)
    assert index.query(10, begin_mod_time=2000) == (IndexEntry(_remote(100, 200, 2000)), 100)
    assert index.query(10) == (IndexEntry(_remote(0, 100, 1000)), 10)


async def test_wait_for_change_wakes_on_commit_and_refresh(tmp_path: Path) -> None:
    index = FragmentIndex()
    spool = Spool(JOURNAL, str(tmp_path))

    waiter = asyncio.ensure_future(index.wait_for_change())
    await asyncio.sleep(0)
    assert not waiter.done()
    index.add_local(_commit(spool, b"abc"), spool)
    await asyncio.wait_for(waiter, 5)

    refresh = asyncio.ensure_future(index.wait_first_refresh())
    changed = asyncio.ensure_future(index.wait_for_change())
    await asyncio.sleep(0)
    assert not refresh.done() and not changed.done()
    index.replace_remote([])
    await asyncio.wait_for(asyncio.gather(refresh, changed), 5)
    assert index.first_refresh_done
    assert _spans(index) == [(0, 3, True)]
