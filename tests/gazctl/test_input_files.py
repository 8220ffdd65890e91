"""Files gazctl reads whole are bounded and must be text: specs, `--offsets`, gazctl.ini.

A file that is not UTF-8, larger than MAX_INPUT_BYTES, or a YAML document
whose aliases expand past MAX_VALUES fails at once with one line naming it,
before anything is dialed: the address points at a closed port, so a command
that got as far as dialing would say it cannot reach it instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gazctl.input_files import MAX_INPUT_BYTES
from gazette_core.broker.journalspace.yaml_io import MAX_VALUES
from tests.gazctl.support import gazctl, isolated_env

CLOSED = "http://127.0.0.1:1"
APPLIES = [["journals", "apply"], ["shards", "apply"], ["journals", "apply", "--dry-run"],
           ["shards", "apply", "--dry-run"]]


@pytest.fixture
def env(state_home: Path) -> dict[str, str]:
    return {**isolated_env(state_home), "BROKER_ADDRESS": CLOSED, "CONSUMER_ADDRESS": CLOSED}


def _bomb() -> str:
    """A dozen lines whose aliases of aliases stand for 9^11 values."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 11)]
    return "\n".join([*lines, "shards: *a10", ""])


@pytest.mark.parametrize("command", APPLIES, ids=" ".join)
def test_specs_that_are_not_utf8_are_refused_naming_the_byte(
        command: list[str], tmp_path: Path, env: dict[str, str]) -> None:
    specs = tmp_path / "specs.yaml"
    specs.write_bytes(b"name: acme/\n# caf\xe9\n")

    from_file = gazctl(*command, "--specs", str(specs), env=env)
    from_stdin = gazctl(*command, env=env, input=specs.read_bytes())

    assert from_file.stderr.decode() == (f"error: invalid input: --specs: {str(specs)!r} is not "
                                         "UTF-8 text: byte 0xe9 at line 2, offset 17\n")
    assert from_stdin.stderr.decode() == ("error: invalid input: --specs: stdin is not UTF-8 "
                                          "text: byte 0xe9 at line 2, offset 17\n")
    assert (from_file.returncode, from_stdin.returncode) == (1, 1)


@pytest.mark.parametrize("command", APPLIES, ids=" ".join)
def test_specs_larger_than_the_bound_are_refused_before_parsing(
        command: list[str], tmp_path: Path, env: dict[str, str]) -> None:
    specs = tmp_path / "big.yaml"
    # A file whose 8th line is already wrong, as large as 50 MB of specs: refused by size
    # alone, without the minutes parsing it would take.
    with specs.open("w") as out:
        out.write("shards:\n" + "- id: shard-000001\n  bogus: 1\n" * 2)
        out.truncate(50 << 20)

    proc = gazctl(*command, "--specs", str(specs), env=env, timeout=20)

    assert proc.stderr.decode() == (f"error: invalid input: --specs: {str(specs)!r} is larger "
                                    "than the 4 MiB gazctl reads; split it into smaller files\n")
    assert proc.returncode == 1
    # Just past the bound by stdin too: nothing beyond it is read.
    proc = gazctl(*command, env=env, input=b"#" * (MAX_INPUT_BYTES + 1), timeout=20)
    assert proc.stderr.decode() == ("error: invalid input: --specs: stdin is larger than the "
                                    "4 MiB gazctl reads; split it into smaller files\n")


@pytest.mark.parametrize("command", APPLIES, ids=" ".join)
def test_aliases_expanding_past_the_bound_are_refused(
        command: list[str], env: dict[str, str]) -> None:
    proc = gazctl(*command, env=env, input=_bomb().encode(), timeout=30)

    assert proc.stderr.decode() == (f"error: invalid input: YAML document holds more than "
                                    f"{MAX_VALUES} values once its aliases are expanded "
                                    "(aliases of aliases?)\n")
    assert proc.returncode == 1


def test_offsets_that_are_not_utf8_or_too_large_are_refused(
        tmp_path: Path, env: dict[str, str]) -> None:
    offsets = tmp_path / "offsets.json"
    offsets.write_bytes(b'{"acme/\xff": 1}')
    proc = gazctl("journals", "read", "-l", "name=acme/x", "--offsets", str(offsets), env=env)
    assert proc.stderr.decode() == (f"error: invalid input: --offsets: {str(offsets)!r} is not "
                                    "UTF-8 text: byte 0xff at line 1, offset 7\n")
    assert proc.returncode == 1

    with offsets.open("wb") as out:
        out.truncate(MAX_INPUT_BYTES + 1)
    proc = gazctl("journals", "read", "-l", "name=acme/x", "--offsets", str(offsets), env=env)
    assert proc.stderr.decode().startswith(f"error: invalid input: --offsets: "
                                           f"{str(offsets)!r} is larger than the 4 MiB")


def test_a_gazctl_ini_that_is_not_utf8_is_refused(tmp_path: Path, env: dict[str, str]) -> None:
    ini = tmp_path / "gazette" / "gazctl.ini"
    ini.parent.mkdir()
    ini.write_bytes(b"[journals]\nZone = z\xff\n")
    env = {**env, "XDG_CONFIG_HOME": str(tmp_path)}
    proc = gazctl("journals", "list", env=env)

    assert proc.stderr.decode() == (f"error: invalid input: {str(ini)!r} is not UTF-8 text: "
                                    "byte 0xff at line 2, offset 19\n")
    assert proc.returncode == 1

