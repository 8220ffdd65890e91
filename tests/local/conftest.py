"""Local-stack fixtures: a private state directory so no test touches the real home."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gazctl.support import isolated_state_home


@pytest.fixture(scope="module", autouse=True)
def state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("state")
    with isolated_state_home(path):
        yield path
