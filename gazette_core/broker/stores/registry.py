"""One FragmentStore per (store URL, file root, file-only mode), built by URL scheme.

Construction failures (a malformed URL, an unknown query parameter, a scheme
without an adapter) do not raise: they yield an `UnusableStore` whose every
operation reports the reason, so the failure surfaces as an unhealthy store
and failed persists, as in Gazette. In file-only mode (`--broker.file-only`)
every URL is served by the file store `file:///` under the file root.
"""

from __future__ import annotations

import importlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from gazette_core.broker.stores.base import FragmentStore, UnusableStore
from gazette_core.broker.stores.fs import FileStore
from gazette_core.broker.stores.memory import MemoryStore
from gazette_core.broker.stores.url import StoreURL, check_params, parse_store_url
from gazette_core.errors import ValidationError


@dataclass(frozen=True, slots=True)
class StoreAdapter:
    """How to build stores of one scheme, and the query parameters it accepts."""

    build: Callable[[StoreURL, str], FragmentStore]
    params: frozenset[str] = frozenset()


_ADAPTERS: dict[str, StoreAdapter] = {
    "file": StoreAdapter(FileStore),
    "memory": StoreAdapter(MemoryStore),
}
# Cloud adapters import their SDKs, so they load on first use of their scheme
# and register themselves with `register_adapter`.
_LAZY_ADAPTERS = {
    "s3": "gazette_core.broker.stores.s3",
    "gs": "gazette_core.broker.stores.gcs",
    "azure": "gazette_core.broker.stores.azure",
    "azure-ad": "gazette_core.broker.stores.azure",
}
# Most recently used first out: any caller of FragmentStoreHealth can name new
# URLs, so the cache is bounded (above the default health checker limit).
_STORES: OrderedDict[tuple[str, str, bool], FragmentStore] = OrderedDict()
MAX_CACHED_STORES = 2048
FILE_ONLY_URL = "file:///"


def register_adapter(scheme: str, adapter: StoreAdapter) -> None:
    """Make `scheme` URLs buildable (cloud adapters register themselves here)."""
    _ADAPTERS[scheme] = adapter


def get_store(url: str, file_root: str, file_only: bool = False) -> FragmentStore:
    """The cached store for `url`; `file_root` roots `file://` URLs.

    With `file_only`, the store of any URL is `file:///` under `file_root`.
    """
    key = (url, file_root, file_only)
    store = _STORES.get(key)
    if store is None:
        store = _STORES[key] = (_build_file_only(url, file_root) if file_only
                                else _build(url, file_root))
        while len(_STORES) > MAX_CACHED_STORES:
            _STORES.popitem(last=False)
    else:
        _STORES.move_to_end(key)
    return store


def _build_file_only(url: str, file_root: str) -> FragmentStore:
    """`file:///` under `file_root` standing in for `url` (docs/design/fragments.md#store-urls).

    The original prefix and query parameters are discarded, but the store
    keeps `url` as its name, so fragments list with `backing_store` equal to
    the journal's configured store and later reads find them here again.
    """
    try:
        parse_store_url(url)
    except ValidationError as exc:
        return UnusableStore(url, exc.reason)
    store = FileStore(parse_store_url(FILE_ONLY_URL), file_root)
    store.url = url
    return store


def _build(url: str, file_root: str) -> FragmentStore:
    try:
        parsed = parse_store_url(url)
        adapter = _adapter(parsed.scheme)
        if adapter is None:
            return UnusableStore(url, f"no fragment store adapter for scheme {parsed.scheme!r}")
        check_params(parsed, adapter.params)
        return adapter.build(parsed, file_root)
    except ValidationError as exc:
        return UnusableStore(url, exc.reason)


def _adapter(scheme: str) -> StoreAdapter | None:
    if scheme not in _ADAPTERS and scheme in _LAZY_ADAPTERS:
        try:
            importlib.import_module(_LAZY_ADAPTERS[scheme])
        except ImportError as exc:
            raise ValidationError("store", f"the {scheme}:// adapter cannot load: {exc}"
                                  ) from exc
    return _ADAPTERS.get(scheme)
