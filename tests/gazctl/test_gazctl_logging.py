"""`--log.level` and `--log.format`: gazctl's stderr notices, the libraries' log records among them.

A library warning (here: a fragment that cannot be read from a wrong
`--file-root`, so it is read through the broker) prints as gazctl's own
warnings do, one `warning: ...` line; `--log.level` hides or adds lines,
`--log.format=json` writes each as a JSON object and `color` colours them even
off a terminal. Whatever the settings, a failure is one `error: ...` line and
the data stays on stdout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gazctl.support import run_main
from tests.gazctl.test_journals_prune import APPENDS, child, populate

P = "logging"
CONTENT = b"".join(APPENDS).decode()
WARNING = "; reading it through the broker"  # two persisted fragments: two warnings


@pytest.fixture(scope="module")
def read(address: str, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A read of a journal with persisted fragments through a file root that lacks them."""
    populate(address, P, [child(P, "a")], ["a"])
    empty = tmp_path_factory.mktemp("empty-root")
    return ["journals", "read", "-l", f"name={P}/a", "--broker.address", address,
            "--file-root", str(empty)]


def test_a_library_warning_is_one_warning_line_by_default(
        read: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, *read)
    assert (code, out) == (0, CONTENT)
    lines = err.splitlines()
    assert len(lines) == 2 and all(line.startswith("warning: direct read of 'logging/a' [")
                                   and line.endswith(WARNING) for line in lines), err


@pytest.mark.parametrize("level", ["error", "fatal"])
def test_a_level_above_warnings_hides_them(level: str, read: list[str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(capsys, *read, "--log.level", level) == (0, CONTENT, "")


@pytest.mark.parametrize("level", ["trace", "debug"])
def test_debug_and_trace_show_more(level: str, read: list[str], address: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, *read, f"--log.level={level}")
    assert (code, out) == (0, CONTENT)
    assert f"debug: using broker at {address}" in err.splitlines()
    assert sum(line.startswith("warning: ") and line.endswith(WARNING)
               for line in err.splitlines()) == 2


def test_json_format_writes_one_object_per_line(read: list[str],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, *read, "--log.format", "json")
    assert (code, out) == (0, CONTENT)
    records = [json.loads(line) for line in err.splitlines()]
    assert [(r["level"], r["msg"].endswith(WARNING), r["logger"]) for r in records] == [
        ("warning", True, "gazette_core.broker.client.retry_reader")] * 2
    assert all(r["time"] for r in records)


def test_color_format_colours_notices_and_the_error_line_off_a_terminal(
        read: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, *read, "--log.format=color")
    assert code == 0 and all(line.startswith("\x1b[") and "warning:" in line
                             for line in err.splitlines()), err
    code, _, err = run_main(capsys, *read[:6], "--log.format=color", "-l", "bad selector!!")
    assert code == 2 and err.startswith("\x1b[") and "error:" in err
    code, _, err = run_main(capsys, *read[:6], "-l", "bad selector!!")
    assert not err.startswith("\x1b[")  # text (the default): colours on a terminal only


def test_gazctls_own_warnings_follow_the_level_and_format_too(
        address: str, read: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({f"{P}/a": 10 ** 9}))
    ahead = [*read[:6], "--offsets", str(offsets)]
    past = f"{P}/a starts at offset {10 ** 9}, past its write head"

    assert run_main(capsys, *ahead)[2].startswith(f"warning: {past}")
    assert run_main(capsys, *ahead, "--log.level=error")[2] == ""
    [record] = [json.loads(line) for line in run_main(capsys, *ahead, "--log.format=json")[2]
                .splitlines()]
    assert (record["level"], record["msg"].startswith(past)) == ("warning", True)


@pytest.mark.parametrize("settings", [["--log.level=debug"], ["--log.format=json"],
                                      ["--log.level=trace", "--log.format=color"]])
def test_a_failure_is_still_one_error_line(settings: list[str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "journals", "list", "--broker.address",
                              "http://127.0.0.1:9", "--timeout", "2", *settings)
    assert (code, out) == (1, "")
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and err.splitlines()[-1] == errors[0], err
