"""gazctl.ini and `gazctl print-config`: precedence flag > environment > file > default."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import Result

from tests.gazctl.support import cli, ok

UNREACHABLE = "http://127.0.0.1:9"  # discard port: nothing listens there


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A working directory and a user config directory, both empty, and no $BROKER_ADDRESS."""
    cwd, config = tmp_path / "cwd", tmp_path / "config"
    cwd.mkdir()
    (config / "gazette").mkdir(parents=True)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.delenv("BROKER_ADDRESS", raising=False)
    return cwd, config / "gazette"


def answered(*args: str) -> Result:
    """Run gazctl and require that a broker answered: the selector matches no journal, so the
    listing is empty."""
    result = cli(*args)
    assert (result.exit_code, result.stdout) == (0, "Name\n"), repr(result.exception)
    return result


def write_ini(directory: Path, address: str, extra: str = "") -> Path:
    path = directory / "gazctl.ini"
    path.write_text(f"[journals.Broker]\nAddress = {address}\n{extra}")
    return path


def test_file_in_the_working_directory_names_the_broker(
        address: str, places: tuple[Path, Path]) -> None:
    write_ini(places[0], address)
    write_ini(places[1], UNREACHABLE)  # only the first file found is read
    answered("journals", "list", "-l", "name=nothing/here")


def test_user_config_directory_is_read_when_the_working_directory_has_none(
        address: str, places: tuple[Path, Path]) -> None:
    write_ini(places[1], address)
    answered("journals", "list", "-l", "name=nothing/here")


def test_environment_and_flag_win_over_the_file(address: str, places: tuple[Path, Path],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    write_ini(places[0], UNREACHABLE)
    monkeypatch.setenv("BROKER_ADDRESS", address)
    answered("journals", "list", "-l", "name=nothing/here")
    failed = cli("journals", "list", "-l", "name=nothing/here", "--broker.address", UNREACHABLE)
    assert failed.exit_code == 1
    assert str(failed.exception).startswith(f"cannot reach broker at {UNREACHABLE}")


def test_print_config_shows_sources_and_redacts_secrets(
        places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_ini(places[0], "http://from-file:8080",
                     "AuthToken = s3cr3t\nbroker.auth-keys = a2V5\n[journals]\nZone = us-east\n")
    monkeypatch.setenv("ZONE", "eu-west")
    result = ok("print-config")
    assert result.stdout.splitlines() == [
        f"; gazctl.ini: {path}",
        "; precedence: flag > environment > gazctl.ini > default",
        "",
        "[journals.Broker]",
        f"Address = http://from-file:8080 ; from {path}",
        f"AuthKeys = <redacted> ; from {path}",
        f"AuthToken = <redacted> ; from {path}",
        "",
        "[journals]",
        "Zone = eu-west ; from $ZONE",
    ]
    assert "s3cr3t" not in result.stdout and "a2V5" not in result.stdout


def test_unknown_keys_are_reported_and_a_broken_file_is_an_error(
        address: str, places: tuple[Path, Path]) -> None:
    write_ini(places[0], address, "Adress = typo\n")
    listed = answered("journals", "list", "-l", "name=nothing/here")
    assert "ignoring unknown key 'Adress' in [journals.Broker]" in listed.stderr
    (places[0] / "gazctl.ini").write_text("Address = no section\n")
    broken = cli("journals", "list", "-l", "name=nothing/here")
    assert broken.exit_code == 1
    assert "gazctl.ini: invalid INI file: File contains no section headers" in str(
        broken.exception)
