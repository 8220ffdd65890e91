"""`gazctl print-config`: the settings gazctl would use, with where each comes from."""

from __future__ import annotations

import os

from gazctl.config import resolve_address
from gazctl.connection import ALL_SETTINGS, setting
from gazctl.ini import KNOWN, SECRETS, IniFile
from gazctl.ini import load as load_ini
from gazctl.options import BrokerAddress
from gazctl.render import stdout

REDACTED = "<redacted>"
# gazctl.ini key -> the connection setting (gazctl.connection) that also has a flag
CONNECTION = {key: name for name, (_, _, key, _) in ALL_SETTINGS.items()}


def print_config(address: str | None = BrokerAddress) -> None:
    """Print the effective configuration as INI (secrets redacted).

    Precedence: flag, then environment variable, then gazctl.ini (./gazctl.ini,
    else ~/.config/gazette/gazctl.ini), then the defaults. Takes
    --broker.address, to show what it would change.
    """
    ini = load_ini()
    where = str(ini.path) if ini.path else "none found"
    lines = [f"; gazctl.ini: {where}", "; precedence: flag > environment > gazctl.ini > default"]
    sections: dict[str, list[str]] = {}
    for key, (section, name, env) in KNOWN.items():
        found = _lookup(key, env, ini, address)
        if found is None:
            continue
        value, source = found
        shown = REDACTED if key in SECRETS else value
        sections.setdefault(section, []).append(f"{name} = {shown} ; from {source}")
    for section, entries in sections.items():
        lines += ["", f"[{section}]", *entries]
    stdout.out("\n".join(lines), highlight=False)


def _lookup(key: str, env: str, ini: IniFile, broker: str | None) -> tuple[str, str] | None:
    """A setting's value and its source, or None when nothing sets it."""
    if key == "address" and broker:
        # Typer fills `broker` from the environment as well as from the flag.
        return broker, f"${env}" if os.environ.get(env) == broker else "--broker.address"
    if key == "address":
        return resolve_address(None)
    if key in CONNECTION:
        value, source = setting(CONNECTION[key], ini)
        if source == "default":
            return None
        if source.endswith(f" or ${env}"):  # given on the command line, or from the environment
            source = f"${env}" if os.environ.get(env) == value else source.split(" or ")[0]
        return value, source
    if os.environ.get(env):
        return os.environ[env], f"${env}"
    if (from_file := ini.get(key)) is not None:
        return from_file, str(ini.path)
    return None
