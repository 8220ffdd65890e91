"""Store construction by URL: caching, adapters, and unusable stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.stores import registry
from gazette_core.broker.stores.base import StoreError, UnusableStore
from gazette_core.broker.stores.fs import FileStore
from gazette_core.broker.stores.memory import MemoryStore
from gazette_core.broker.stores.registry import get_store

FRAGMENT = pb.Fragment(journal="a/journal", begin=0, end=1, sum=pb.SHA1Sum(),
                       compression_codec=pb.NONE)


def test_one_instance_per_url_and_file_root(tmp_path: Path) -> None:
    store = get_store("file:///fragments/", str(tmp_path))
    assert isinstance(store, FileStore)
    assert store.url == "file:///fragments/"
    assert get_store("file:///fragments/", str(tmp_path)) is store
    assert get_store("file:///fragments/", str(tmp_path / "other")) is not store
    assert isinstance(get_store("memory://registry-test/", ""), MemoryStore)


def test_find_and_replace_params_are_accepted_case_insensitively(tmp_path: Path) -> None:
    store = get_store("file:///fragments/?FIND=a/&Replace=b/", str(tmp_path))
    assert isinstance(store, FileStore)
    assert store.path_of(FRAGMENT) == (
        f"{tmp_path}/fragments/b/journal/0000000000000000-0000000000000001-"
        "0000000000000000000000000000000000000000.raw"
    )


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///fragments/?profile=x", "unknown query parameter 'profile' in store URL "
         "'file:///fragments/?profile=x'"),
        ("file:///fragments", "path of store URL 'file:///fragments' must end in '/'"),
        ("file://host/fragments/", "file store URL 'file://host/fragments/' must not have a host"),
        ("memory:///", "store URL 'memory:///' is missing a host"),
        ("/just/a/path/", "'/just/a/path/' is not an absolute URL"),
        ("ftp://host/p/", "no fragment store adapter for scheme 'ftp'"),
    ],
)
async def test_bad_urls_build_stores_that_fail_every_operation(url: str, reason: str) -> None:
    store = get_store(url, "/tmp")
    assert isinstance(store, UnusableStore)
    expected = f"fragment store {url!r} is unusable: {reason}"
    for operation in (
        store.exists(FRAGMENT),
        store.put(FRAGMENT, b"x"),
        store.list("a/journal"),
        store.delete(FRAGMENT),
    ):
        with pytest.raises(StoreError) as exc:
            await operation
        assert str(exc.value) == expected
    with pytest.raises(StoreError) as exc:
        [chunk async for chunk in store.open(FRAGMENT)]
    assert str(exc.value) == expected
    with pytest.raises(StoreError) as exc:
        store.sign_get(FRAGMENT, 60)
    assert str(exc.value) == expected


def test_the_cache_keeps_only_the_most_recently_used_stores(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "MAX_CACHED_STORES", 3)
    monkeypatch.setattr(registry, "_STORES", registry._STORES.__class__())
    first = get_store("file:///first/", str(tmp_path))
    for i in range(5):
        get_store(f"file:///other-{i}/", str(tmp_path))
        assert get_store("file:///first/", str(tmp_path)) is first  # in use: kept
    assert len(registry._STORES) == 3
