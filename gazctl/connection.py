"""How gazctl connects to brokers: client TLS files and authorization, on every dialing command.

The five settings of Go's `[journals.Broker]` group besides the address:
`--broker.cert-file`, `--broker.cert-key-file`, `--broker.trusted-ca-file`
(TLS for `https://` addresses), `--broker.auth-keys` (gazctl signs its own
tokens with the first key) and `--broker.auth-token` (a pre-shared token,
used when there are no keys). Each comes from its flag, else its environment
variable, else gazctl.ini, else empty.

They are declared once, here, and `add_connection_options` adds them to
every command that takes `--broker.address` (a `broker` parameter), so a new
command gets them by taking the address; the command itself never sees them.
`run()` turns them into the client configuration of all its dials.

`shards` commands dial consumers too: a command taking `--consumer.address`
(a `consumer` parameter) gets the same five settings as `--consumer.*`
options (`$CONSUMER_*`, `[shards.Consumer]` in gazctl.ini), applied to its
consumer dials only.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import typer

from gazctl.ini import IniFile
from gazctl.ini import load as load_ini
from gazette_core.broker.client.channel import ClientConfig
from gazette_core.errors import GazetteError, ValidationError
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
}
# The consumer's twins: the same settings under --consumer.*, $CONSUMER_* and [shards.Consumer].
CONSUMER_SETTINGS: dict[str, tuple[str, str, str, str]] = {
    name.replace("broker_", "consumer_"): (
        flag.replace("--broker.", "--consumer."), env.replace("BROKER_", "CONSUMER_"),
        "consumer" + key, text.replace("brokers", "consumers").replace("--broker.", "--consumer."))
    for name, (flag, env, key, text) in SETTINGS.items()
}
ALL_SETTINGS = {**SETTINGS, **CONSUMER_SETTINGS}
# The parameter a command takes to dial each side, and the settings that side gets.
GROUPS = {"broker": (SETTINGS, PANEL), "consumer": (CONSUMER_SETTINGS, CONSUMER_PANEL)}
UNAUTHENTICATED_HINT = ("set --broker.auth-keys or --broker.auth-token, or $BROKER_AUTH_KEYS "
                        "or $BROKER_AUTH_TOKEN")

# Values given as flags (or their environment variables) to the running command.
_given: ContextVar[dict[str, str | None]] = ContextVar("gazctl_connection_flags")


def _option(name: str, panel: str) -> Any:
    flag, env, _, text = ALL_SETTINGS[name]
    return typer.Option(None, flag, envvar=env, show_envvar=True, help=text,
                        rich_help_panel=panel)


def with_connection_options(command: Callable[..., Any], side: str = "broker"
                            ) -> Callable[..., Any]:
    """`command` with one side's connection options added to its signature, recorded for run().

    `side` is "broker" or "consumer" (see GROUPS).
    """
    settings, panel = GROUPS[side]
    signature = inspect.signature(command)
    if any(name in signature.parameters for name in settings):
        return command

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # Merged: a command dialing both sides is wrapped once per side.
        _given.set({**_given.get({}), **{name: kwargs.pop(name, None) for name in settings}})
        return command(*args, **kwargs)

    extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                               default=_option(name, panel), annotation="str | None")
             for name in settings]
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), *extra])
    wrapper.__annotations__ = {**command.__annotations__,
                               **dict.fromkeys(settings, "str | None")}
    return wrapper


def add_connection_options(app: typer.Typer) -> None:
    """Give every command of `app`'s tree the connection options of each side it dials.

    A command dials brokers when it takes `broker`, consumers when it takes `consumer`.
    """
    for info in app.registered_commands:
        for side in GROUPS:
            callback = info.callback
            if callback is not None and side in inspect.signature(callback).parameters:
                info.callback = with_connection_options(callback, side)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            add_connection_options(group.typer_instance)


def setting(name: str, ini: IniFile | None = None) -> tuple[str, str]:
    """A setting's value and where it came from: the flag or environment, gazctl.ini, or ''."""
    flag, env, key, _ = ALL_SETTINGS[name]
    given = _given.get({}).get(name)
    if given:
        return given, f"{flag} or ${env}"
    if os.environ.get(env):
        return os.environ[env], f"${env}"
    ini = ini if ini is not None else load_ini()
    if (value := ini.get(key)) is not None:
        return value, str(ini.path)
    return "", "default"


def client_config(side: str = "broker") -> ClientConfig:
    """The TLS files and authorization of this command's calls to one side's servers."""
    settings = GROUPS[side][0]
    ini: IniFile | None = None
    if not all(_given.get({}).get(name) or os.environ.get(settings[name][1])
               for name in settings):
        ini = load_ini()  # once, and only when some setting may come from it
    values = {name.removeprefix(f"{side}_"): setting(name, ini)[0] for name in settings}
    tls = ClientTLS(values["cert_file"], values["cert_key_file"], values["trusted_ca_file"])
    try:
        call_auth = CallAuth.from_settings(values["auth_keys"], values["auth_token"])
    except GazetteError as exc:
        raise ValidationError(f"--{side}.auth-keys", str(exc)) from None
    return ClientConfig(tls=tls, auth=call_auth)
