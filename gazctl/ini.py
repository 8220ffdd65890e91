"""gazctl.ini: settings kept in a file, below flags and environment variables.

gazctl reads the first of `./gazctl.ini` and `$XDG_CONFIG_HOME/gazette/gazctl.ini`
(`~/.config/gazette/gazctl.ini` by default); files are not merged. Sections
and keys follow Go's gazctl, e.g.

    [journals.Broker]
    Address = http://broker.example:8080

    [journals.Logging]
    Level = info

    [shards.Consumer]
    Address = http://consumer.example:9000

    [journals.list]
    Format = yaml

Section names are case-insensitive, and a key may be written as Go's field
name (`Address`, `AuthToken`, `Size`) or as the long flag (`broker.address`).
The group sections (`[journals]`, `[journals.Broker]`, `[journals.Logging]`,
`[shards]`, `[shards.Consumer]`, `[shards.Broker]`, `[shards.Logging]`) are
read here; a subcommand's section (`[journals.list]`) is kept in `commands`
for `gazctl.ini_defaults`. Unlike Go, a flag or environment variable always
wins over the file, and a key we don't know is reported rather than
silently ignored.
"""

from __future__ import annotations

import configparser
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

from gazctl import logs
from gazctl.input_files import read_file
from gazette_core.errors import ValidationError

FILE_NAME = "gazctl.ini"
# Normalised key -> (section, Go field name, environment variable), for lookup and printing.
KNOWN = {
    "address": ("journals.Broker", "Address", "BROKER_ADDRESS"),
    "certfile": ("journals.Broker", "CertFile", "BROKER_CERT_FILE"),
    "certkeyfile": ("journals.Broker", "CertKeyFile", "BROKER_CERT_KEY_FILE"),
    "trustedcafile": ("journals.Broker", "TrustedCAFile", "BROKER_TRUSTED_CA_FILE"),
    "authkeys": ("journals.Broker", "AuthKeys", "BROKER_AUTH_KEYS"),
    "authtoken": ("journals.Broker", "AuthToken", "BROKER_AUTH_TOKEN"),
    "cachesize": ("journals.Broker", "Size", "BROKER_CACHE_SIZE"),
    "cachettl": ("journals.Broker", "TTL", "BROKER_CACHE_TTL"),
    "zone": ("journals", "Zone", "ZONE"),
    "loglevel": ("journals.Logging", "Level", "LOG_LEVEL"),
    "logformat": ("journals.Logging", "Format", "LOG_FORMAT"),
    # Not in Go's gazctl: the brokers' --broker.file-root, for `journals prune`.
    "fileroot": ("journals.Broker", "FileRoot", "BROKER_FILE_ROOT"),
    # The consumer settings of `shards` commands, keyed with a "consumer" prefix.
    "consumeraddress": ("shards.Consumer", "Address", "CONSUMER_ADDRESS"),
    "consumercertfile": ("shards.Consumer", "CertFile", "CONSUMER_CERT_FILE"),
    "consumercertkeyfile": ("shards.Consumer", "CertKeyFile", "CONSUMER_CERT_KEY_FILE"),
    "consumertrustedcafile": ("shards.Consumer", "TrustedCAFile", "CONSUMER_TRUSTED_CA_FILE"),
    "consumerauthkeys": ("shards.Consumer", "AuthKeys", "CONSUMER_AUTH_KEYS"),
    "consumerauthtoken": ("shards.Consumer", "AuthToken", "CONSUMER_AUTH_TOKEN"),
    "consumercachesize": ("shards.Consumer", "Size", "CONSUMER_CACHE_SIZE"),
    "consumercachettl": ("shards.Consumer", "TTL", "CONSUMER_CACHE_TTL"),
}
SECRETS = frozenset({"authkeys", "authtoken", "consumerauthkeys", "consumerauthtoken"})
# Go's field names of options nested in a group (the route cache's, the logging group's).
_FIELDS = {"size": "cachesize", "ttl": "cachettl", "level": "loglevel", "format": "logformat"}
# Each group section, lower-cased, and the sections whose keys it may hold.
_GROUP_SECTIONS = {"journals": "journals", "journals.broker": "journals.broker",
                   "journals.logging": "journals.logging", "shards": "shards",
                   "shards.consumer": "shards.consumer", "shards.broker": "journals.broker",
                   "shards.logging": "journals.logging"}


@dataclass
class IniFile:
    """The settings of the gazctl.ini in use (none: `path` is None)."""

    path: Path | None = None
    values: dict[str, str] = field(default_factory=dict)  # normalised key -> value
    # Subcommand sections, e.g. "journals.list" -> [(key as written, value), ...]
    commands: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        return self.values.get(key)


def normalise(key: str) -> str:
    """`broker.auth-token`, `AuthToken` and `authtoken` are one key."""
    key = key.lower()
    for prefix in ("broker.", "journals."):
        key = key.removeprefix(prefix)
    return key.replace("-", "").replace("_", "").replace(".", "")


def _key_in(section: str, key: str) -> str:
    """The normalised key of `key` in group section `section`; consumer settings get a prefix."""
    norm = normalise(key)
    norm = _FIELDS.get(norm, norm)
    consumer = "consumer" + norm.removeprefix("consumer")
    if section in ("shards", "shards.consumer") and consumer in KNOWN:
        return consumer
    return norm


def candidates() -> list[Path]:
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [Path.cwd() / FILE_NAME, Path(config_home) / "gazette" / FILE_NAME]


def load() -> IniFile:
    """The first gazctl.ini found, parsed; an empty IniFile when there is none."""
    path = next((p for p in candidates() if p.is_file()), None)
    if path is None:
        return IniFile()
    stat = path.stat()
    return _parse(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _parse(path: Path, _mtime_ns: int, _size: int) -> IniFile:
    """`path` parsed, once per version of the file: its warnings are printed once."""
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=(";", "#"))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(read_file(path, ""), str(path))
    except OSError as exc:
        raise ValidationError(str(path), f"cannot read: {exc.strerror}") from None
    except configparser.Error as exc:
        raise ValidationError(str(path), f"invalid INI file: {exc.message}") from None
    ini = IniFile(path)
    for section in parser.sections():
        group = _GROUP_SECTIONS.get(section.lower())
        if group is None:  # a subcommand's, checked against the command tree later
            ini.commands.setdefault(section, []).extend(parser.items(section))
            continue
        for key, value in parser.items(section):
            norm = _key_in(section.lower(), key)
            if norm in KNOWN and group in (KNOWN[norm][0].lower(), "journals", "shards"):
                ini.values[norm] = value
            else:
                logs.warn(f"{path}: ignoring unknown key {key!r} in [{section}]")
    return ini
