"""Temporarily changed environment variables, for emulator harnesses and tests."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def patched_env(values: Mapping[str, str], hidden: tuple[str, ...] = ()) -> Iterator[None]:
    """Set `values` and remove `hidden` from os.environ for the duration; then restore them.

    Hiding matters as much as setting: a developer's own cloud credentials or
    endpoint overrides must not steer a test to a real service.
    """
    saved = {name: os.environ.get(name) for name in (*values, *hidden)}
    os.environ.update(values)
    for name in hidden:
        os.environ.pop(name, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
