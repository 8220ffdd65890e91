"""Every Python block of the docs runs as written, against a real local stack.

The stack is the one the quickstart leaves: `gazctl local up`, the example
journals of docs/examples/journals.yaml with clicks appended (as `make demo`
does), and the environment `gazctl local env` prints. Each block runs in a
process of its own, from a directory of its own, as a reader would run it;
how a marked block is treated is described in tests/docs/snippets.py.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gazette_core.local import demo
from tests.docs.snippets import (
    KINDS,
    ROOT,
    Block,
    excerpt_path,
    first_word,
    pages,
    python_blocks,
)
from tests.gazctl.support import GAZCTL, isolated_state_home, running_stack

RUN_S = 300  # a Spark session starts in this too, on a loaded machine
BLOCKS = [b for b in python_blocks() if b.kind not in ("file", "skip")]


@pytest.fixture(scope="module")
def stack_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment of a shell that ran the quickstart and `eval "$(gazctl local env)"`."""
    directory = tmp_path_factory.mktemp("stack")
    with isolated_state_home(tmp_path_factory.mktemp("state")), running_stack(directory):
        env = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHONPATH"] = str(ROOT)  # run from the repository root, as the docs say
        exported = _gazctl(env, "local", "env", "--dir", str(directory))
        for line in exported.splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = shlex.split(value)[0]
        _gazctl(env, "journals", "apply", "--specs", str(ROOT / "docs/examples/journals.yaml"))
        _gazctl(env, "journals", "append", "-l", "name=examples/clicks", stdin=demo.clicks(0))
        yield env


def _gazctl(env: dict[str, str], *args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run([*GAZCTL, *args], env=env, input=stdin, capture_output=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, (args, proc.stderr.decode())
    return proc.stdout.decode()


def _run(argv: list[str], directory: Path, env: dict[str, str], where: str) -> str:
    proc = subprocess.run(argv, cwd=directory, env=env, capture_output=True, timeout=RUN_S,
                          check=False)
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, f"{where} exited {proc.returncode}:\n{out}\n{err}"
    return out


def _prepare(block: Block, directory: Path) -> None:
    """Write the page's `file` blocks into `directory`, where `block` will run."""
    for other in python_blocks():
        if other.page == block.page and other.kind == "file":
            (directory / first_word(other.argument)).write_text(other.text)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_python_block_runs_as_written(block: Block, stack_env: dict[str, str],
                                      tmp_path: Path) -> None:
    _prepare(block, tmp_path)
    env = dict(stack_env)
    if block.kind == "excerpt":
        path = excerpt_path(block)
        assert _missing_lines(block.text, path.read_text()) == [], f"{block.where} quotes {path}"
        _run([sys.executable, str(path)], tmp_path, env, str(path))
        return
    if block.kind == "env":
        name, _, value = first_word(block.argument).partition("=")
        env[name] = value
    if block.kind == "pytest":
        name = first_word(block.argument)
        (tmp_path / name).write_text(block.text)
        _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
              "-o", "asyncio_default_fixture_loop_scope=function", name], tmp_path, env,
             block.where)
        return
    (tmp_path / "snippet.py").write_text(block.text)
    _run([sys.executable, "snippet.py"], tmp_path, env, block.where)


def _missing_lines(excerpt: str, source: str) -> list[str]:
    """Lines of `excerpt` not found, in order and ignoring indentation, in `source`."""
    lines = iter(line.strip() for line in source.splitlines())
    return [line for line in (x.strip() for x in excerpt.splitlines())
            if line and not any(line == candidate for candidate in lines)]


def test_every_marker_is_known_and_explained() -> None:
    problems = []
    for block in python_blocks():
        if block.kind and block.kind not in KINDS:
            problems.append(f"{block.where}: unknown doc-test marker {block.kind!r}")
        if block.kind in ("file", "pytest", "env") and not first_word(block.argument):
            problems.append(f"{block.where}: {block.kind} needs an argument")
        if block.kind in ("skip", "file", "excerpt", "env") and "(" not in block.argument:
            problems.append(f"{block.where}: {block.kind} needs its reason in parentheses")

    assert problems == []


def test_the_docs_have_python_blocks_to_run() -> None:
    covered = {b.page.name for b in BLOCKS}

    assert {"consumers.md", "quickstart.md", "operations.md", "dataframes.md"} <= covered
    assert len(pages()) > 5
