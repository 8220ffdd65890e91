"""The settings of Go's `journals` and `shards` groups, and the client configuration they make.

Besides the address, Go's `[journals.Broker]` group has `--broker.cert-file`,
`--broker.cert-key-file`, `--broker.trusted-ca-file` (TLS for `https://`
addresses), `--broker.auth-keys` (gazctl signs its own tokens with the first
key), `--broker.auth-token` (a pre-shared token, used when there are no
keys) and the route cache, `--broker.cache.size` and `--broker.cache.ttl`
(`gazctl.routes`). `shards` has the same under `--consumer.*` (`$CONSUMER_*`,
`[shards.Consumer]`) for its consumer dials. Both groups have `--zone`,
`--log.level` and `--log.format` (`gazctl.logs`).

Each setting comes from its flag, else its environment variable, else
gazctl.ini, else its default. `gazctl.group_options` declares them on the
groups and their subcommands and records the values given (`remember`); the
command itself never sees them.
"""

from __future__ import annotations

import logging
import os
from contextvars import ContextVar

from gazctl.ini import IniFile
from gazctl.ini import load as load_ini
from gazctl.usage import UsageError
from gazette_core.broker.client.channel import ClientConfig
from gazette_core.errors import GazetteError
from gazette_core.server.client_auth import CallAuth
from gazette_core.server.tls import ClientTLS

PANEL = "Broker connection"
CONSUMER_PANEL = "Consumer connection"
# parameter name -> (flag, environment variable, gazctl.ini key, help)
SETTINGS: dict[str, tuple[str, str, str, str]] = {
    "broker_cert_file": ("--broker.cert-file", "BROKER_CERT_FILE", "certfile",
                         "Client TLS certificate (PEM), presented to https brokers."),
    "broker_cert_key_file": ("--broker.cert-key-file", "BROKER_CERT_KEY_FILE", "certkeyfile",
                             "Key (PEM) of --broker.cert-file."),
    "broker_trusted_ca_file": ("--broker.trusted-ca-file", "BROKER_TRUSTED_CA_FILE",
                               "trustedcafile",
                               "CA bundle (PEM) verifying https brokers (default: the system "
                               "pool)."),
    "broker_auth_keys": ("--broker.auth-keys", "BROKER_AUTH_KEYS", "authkeys",
                         "Base64 HMAC keys separated by commas or spaces; gazctl signs its own "
                         "tokens with the first."),
    "broker_auth_token": ("--broker.auth-token", "BROKER_AUTH_TOKEN", "authtoken",
                          "Pre-shared bearer token, sent when --broker.auth-keys is empty."),
    "broker_cache_size": ("--broker.cache.size", "BROKER_CACHE_SIZE", "cachesize",
                          "Journals whose routes gazctl keeps, to send reads and appends "
                          "straight to their brokers (0, the default: the broker at "
                          "--broker.address forwards them)."),
    "broker_cache_ttl": ("--broker.cache.ttl", "BROKER_CACHE_TTL", "cachettl",
                         "How long a route is kept after it was learned: a duration like 1m "
                         "(the default), or seconds; 0 keeps routes until a call along one "
                         "fails."),
}
# Consumers proxy each shard call to the shard's primary, so gazctl needs no route cache.
_CONSUMER_CACHE = ("Accepted for compatibility with Go's gazctl; no effect (consumers forward "
                   "shard calls to the shard's primary).")
# The consumer's twins: the same settings under --consumer.*, $CONSUMER_* and [shards.Consumer].
CONSUMER_SETTINGS: dict[str, tuple[str, str, str, str]] = {
    name.replace("broker_", "consumer_"): (
        flag.replace("--broker.", "--consumer."), env.replace("BROKER_", "CONSUMER_"),
        "consumer" + key,
        _CONSUMER_CACHE if "cache" in name
        else text.replace("brokers", "consumers").replace("--broker.", "--consumer."))
    for name, (flag, env, key, text) in SETTINGS.items()
}
# The settings of both groups.
BASE_SETTINGS: dict[str, tuple[str, str, str, str]] = {
    "zone": ("--zone", "ZONE", "zone",
             "Availability zone of this client: with a route cache, reads go to a journal's "
             "broker in it when there is one."),
    "log_level": ("--log.level", "LOG_LEVEL", "loglevel",
                  "Least severe stderr notice shown: trace, debug, info, warn (the default), "
                  "error or fatal."),
    "log_format": ("--log.format", "LOG_FORMAT", "logformat",
                   "How stderr notices are written: text (the default), color (text with "
                   "colours forced on) or json (one object per line)."),
}
ALL_SETTINGS = {**BASE_SETTINGS, **SETTINGS, **CONSUMER_SETTINGS}
DEFAULTS = {"log_level": "warn", "log_format": "text", "broker_cache_size": "0",
            "broker_cache_ttl": "1m", "consumer_cache_size": "0", "consumer_cache_ttl": "1m"}
# The parameter a command takes to dial each side, and the settings that side gets.
GROUPS = {"broker": (SETTINGS, PANEL), "consumer": (CONSUMER_SETTINGS, CONSUMER_PANEL)}
_TLS_AUTH = ("cert_file", "cert_key_file", "trusted_ca_file", "auth_keys", "auth_token")
UNAUTHENTICATED_HINT = ("set --broker.auth-keys or --broker.auth-token, or $BROKER_AUTH_KEYS "
                        "or $BROKER_AUTH_TOKEN")

log = logging.getLogger("gazctl")

# Values given as flags (or their environment variables) to the running command.
_given: ContextVar[dict[str, str | None]] = ContextVar("gazctl_connection_flags")


def forget() -> None:
    """Start a command with no settings given (an earlier command of this process had some)."""
    _given.set({})


def remember(values: dict[str, str | None]) -> None:
    """Record the settings the running command was given (flags, or their environment)."""
    _given.set({**_given.get({}), **values})


def setting(name: str, ini: IniFile | None = None) -> tuple[str, str]:
    """A setting's value and where it came from: the flag or environment, gazctl.ini, or default."""
    flag, env, key, _ = ALL_SETTINGS[name]
    given = _given.get({}).get(name)
    if given:
        return given, f"{flag} or ${env}"
    if os.environ.get(env):
        return os.environ[env], f"${env}"
    ini = ini if ini is not None else load_ini()
    if (value := ini.get(key)) is not None:
        return value, str(ini.path)
    return DEFAULTS.get(name, ""), "default"


def client_config(side: str = "broker") -> ClientConfig:
    """The TLS files and authorization of this command's calls to one side's servers."""
    names = [f"{side}_{name}" for name in _TLS_AUTH]
    ini: IniFile | None = None
    if not all(_given.get({}).get(name) or os.environ.get(ALL_SETTINGS[name][1])
               for name in names):
        ini = load_ini()  # once, and only when some setting may come from it
    values = {name.removeprefix(f"{side}_"): setting(name, ini)[0] for name in names}
    tls = ClientTLS(values["cert_file"], values["cert_key_file"], values["trusted_ca_file"])
    try:
        call_auth = CallAuth.from_settings(values["auth_keys"], values["auth_token"])
    except GazetteError as exc:
        raise UsageError(f"--{side}.auth-keys", str(exc)) from None
    log.debug("%s calls carry %s", side, _authorization(side, call_auth))
    return ClientConfig(tls=tls, auth=call_auth)


def _authorization(side: str, call_auth: CallAuth | None) -> str:
    """What authorizes a side's calls, for --log.level=debug (never the secret itself)."""
    if call_auth is None:
        return "no authorization"
    if call_auth.key:
        return f"tokens signed with the first key of --{side}.auth-keys"
    return f"the pre-shared token of --{side}.auth-token"
