"""A scripted $GAZ_EDITOR for the `journals edit` and `shards edit` tests.

The editor is a small Python program run in place of vi. Each time it is
opened it saves a copy of what it was shown, then applies the next step of
its script: text replacements, emptying the file (`"empty"`), exiting 3
(`"fail"`), or first running gazctl (someone else changing the specs while
the file is open).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

EDITOR = """\
import json, subprocess, sys
from pathlib import Path
target, state = Path(sys.argv[-1]), Path(sys.argv[1])
steps = json.loads((state / "steps.json").read_text())
opened = len(list(state.glob("opened-*")))
text = target.read_text()
(state / f"opened-{opened}").write_text(text)
step = steps[opened]
if step == "empty":
    text = ""
elif step == "fail":
    sys.exit(3)
else:
    if isinstance(step, dict):  # someone else applies specs while we edit
        subprocess.run([sys.executable, "-m", "gazctl.main", *step["argv"]],
                       input=step["input"].encode(), check=True, capture_output=True)
        step = step["replace"]
    for old, new in step:
        assert old in text, (old, text)
        text = text.replace(old, new)
target.write_text(text)
"""


class ScriptedEditor:
    """The editor gazctl opens in this test: set up in `directory`, scripted per test."""

    def __init__(self, directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.directory = directory
        program = directory / "editor.py"
        program.write_text(EDITOR)
        monkeypatch.setenv("GAZ_EDITOR", f"{sys.executable} {program} {directory}")

    def script(self, *steps: object) -> None:
        """One step per opening: a list of [old, new] replacements, "empty", "fail", or
        {"argv": gazctl's arguments, "input": its stdin, "replace": replacements}."""
        (self.directory / "steps.json").write_text(json.dumps(list(steps)))

    def opened(self) -> list[str]:
        """What the editor was shown, each time it opened."""
        count = len(list(self.directory.glob("opened-*")))
        return [(self.directory / f"opened-{i}").read_text() for i in range(count)]

    def warnings(self, index: int) -> list[str]:
        """The warning lines gazctl wrote atop the file the `index`th time it opened."""
        return [line for line in self.opened()[index].splitlines() if line.startswith("#\u26a0")]
