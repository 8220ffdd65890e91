"""The committed CLI reference matches what gazctl's help text generates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_cli_reference_is_current(tmp_path: Path) -> None:
    out = tmp_path / "gazctl.md"
    subprocess.run([sys.executable, "-m", "typer", "gazctl.main", "utils", "docs",
                    "--name", "gazctl", "--output", str(out)], cwd=ROOT, check=True,
                   capture_output=True)
    committed = (ROOT / "docs" / "reference" / "gazctl.md").read_text()
    assert out.read_text() == committed, "docs/reference/gazctl.md is stale: run `make docs`"
