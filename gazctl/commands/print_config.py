"""`gazctl print-config`: the settings gazctl would use, with where each comes from."""

from __future__ import annotations

import os

from gazctl.config import resolve_address
from gazctl.ini import KNOWN, SECRETS
from gazctl.ini import load as load_ini
from gazctl.render import stdout

REDACTED = "<redacted>"


def print_config() -> None:
    """Print the effective configuration as INI (secrets redacted).

    Precedence: flag, then environment variable, then gazctl.ini (./gazctl.ini,
    else ~/.config/gazette/gazctl.ini), then the defaults.
    """
    ini = load_ini()
    where = str(ini.path) if ini.path else "none found"
    lines = [f"; gazctl.ini: {where}", "; precedence: flag > environment > gazctl.ini > default"]
    sections: dict[str, list[str]] = {}
    for key, (section, name, env) in KNOWN.items():
        if os.environ.get(env):
            value, source = os.environ[env], f"${env}"
        elif (from_file := ini.get(key)) is not None:
            value, source = from_file, str(ini.path)
        elif key == "address":
            value, source = resolve_address(None)
        else:
            continue
        shown = REDACTED if key in SECRETS else value
        sections.setdefault(section, []).append(f"{name} = {shown} ; from {source}")
    for section, entries in sections.items():
        lines += ["", f"[{section}]", *entries]
    stdout.out("\n".join(lines), highlight=False)
