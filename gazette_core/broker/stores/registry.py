"""One FragmentStore per (store URL, file root), built by URL scheme.

Construction failures (a malformed URL, an unknown query parameter, a scheme
without an adapter) do not raise: they yield an `UnusableStore` whose every
operation reports the reason, so the failure surfaces as an unhealthy store
and failed persists, as in Gazette.
"""

from __future__ import annotations

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
_STORES: dict[tuple[str, str], FragmentStore] = {}


def register_adapter(scheme: str, adapter: StoreAdapter) -> None:
    """Make `scheme` URLs buildable (cloud adapters register themselves here)."""
    _ADAPTERS[scheme] = adapter


def get_store(url: str, file_root: str) -> FragmentStore:
    """The cached store for `url`; `file_root` roots `file://` URLs."""
    key = (url, file_root)
    store = _STORES.get(key)
    if store is None:
        store = _STORES[key] = _build(url, file_root)
    return store


def _build(url: str, file_root: str) -> FragmentStore:
    try:
        parsed = parse_store_url(url)
        adapter = _ADAPTERS.get(parsed.scheme)
        if adapter is None:
            return UnusableStore(url, f"no fragment store adapter for scheme {parsed.scheme!r}")
        check_params(parsed, adapter.params)
        return adapter.build(parsed, file_root)
    except ValidationError as exc:
        return UnusableStore(url, exc.reason)
