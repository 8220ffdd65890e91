"""gazctl fixtures: one real local stack (etcd + broker processes) per test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.local.stack import Stack
from tests.gazctl.editor_support import ScriptedEditor
from tests.gazctl.support import isolated_state_home, running_stack


@pytest.fixture(scope="module", autouse=True)
def state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Keep every test's active-stack pointer out of the real home directory."""
    path = tmp_path_factory.mktemp("state")
    with isolated_state_home(path):
        yield path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, state_home: Path) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("stack")) as s:
        yield s


@pytest.fixture(scope="module")
def address(stack: Stack) -> str:
    """The broker endpoint every command of the module is pointed at."""
    return stack.brokers[0].endpoint


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ScriptedEditor:
    """A scripted $GAZ_EDITOR for the edit commands' tests (`tests.gazctl.editor_support`)."""
    return ScriptedEditor(tmp_path, monkeypatch)
