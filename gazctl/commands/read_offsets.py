"""The offsets files of `gazctl journals read`: `--offsets` in, `--offsets-out` out.

Both are JSON objects of journal name -> offset, as Go's gazctl writes them.
The output file is checked before anything is read (content read and then
lost to a bad path could not be read again from the same offsets) and is
written atomically at the end.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gazctl.input_files import read_file
from gazctl.usage import UsageError
from gazette_core.errors import GazetteError, ValidationError


def check_writable(path: str) -> None:
    """Fail now if `--offsets-out` could not be written at the end."""
    target = Path(path)
    if target.is_dir():
        raise UsageError("--offsets-out", f"{path!r} is a directory")
    probe = target.with_name(target.name + ".temp")
    try:
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise UsageError("--offsets-out", f"cannot write {path!r}: {exc.strerror}") from None


def load_offsets(path: str) -> dict[str, int]:
    if not path:
        return {}
    try:
        data = json.loads(read_file(Path(path), "--offsets"))
    except OSError as exc:
        raise UsageError("--offsets", f"cannot read {path!r}: {exc.strerror} "
                         "(create it containing {} to start from scratch)") from None
    except json.JSONDecodeError as exc:
        raise ValidationError("--offsets", f"{path!r} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, int) for k, v in data.items()):
        raise ValidationError("--offsets", f"{path!r} must map journal names to offsets")
    return data


def save_offsets(path: str, offsets: dict[str, int], same: bool) -> None:
    """Write atomically (temp file, then rename); an overwritten input is kept as .previous."""
    target = Path(path)
    temp = target.with_name(target.name + ".temp")
    try:
        temp.write_text(json.dumps(dict(sorted(offsets.items())), indent=2) + "\n")
        if same and target.exists():
            os.replace(target, target.with_name(target.name + ".previous"))
        os.replace(temp, target)
    except OSError as exc:
        raise GazetteError(f"--offsets-out: cannot write {path!r}: {exc.strerror}") from None
