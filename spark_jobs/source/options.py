"""The options of the `gazette` data source, checked once, in Spark's style (`splitBytes`).

Spark hands a data source its options as strings in a case-insensitive map,
their names lower-cased. `read_options` turns those of a read (batch or
streaming) into a `ReadOptions`; the sink's options are the writer's
(sink/options.py). Messages name options as the docs spell them
(`startingOffsets`, whatever case the caller used): any option a mode does
not know is refused naming the closest known one (option_names.py), so a typo
(`startingOffset`) is one clear line rather than silently ignored.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gazette_core.broker.client.channel import ClientConfig, default_address
from gazette_core.errors import ValidationError
from gazette_core.server.client_auth import CallAuth
from gazette_core.server.tls import ClientTLS
from spark_jobs.decode.parse_modes import CORRUPT_DEFAULT, MODES, PERMISSIVE
from spark_jobs.selection import FILE_ONLY_ENV, FILE_ROOT_ENV, TRUE
from spark_jobs.source import option_names

DEFAULT_SPLIT_BYTES = 64 << 20
DEFAULT_RING_SIZE = 8192
# Offsets of startingOffsets/endingOffsets that are not byte offsets, as Kafka's source has them.
EARLIEST = -2
LATEST = -1

# How the client reaches brokers: shared by reads and writes.
CLIENT_OPTIONS = ("broker", "tlsCertFile", "tlsKeyFile", "tlsCaFile", "authToken", "authKeys")
# Where executors find fragments: shared by batch and streaming reads.
STORE_OPTIONS = ("fileRoot", "fileOnly")
# How documents that do not fit the schema are read (decode/parse_modes.py): both kinds.
PARSE_OPTIONS = ("mode", "columnNameOfCorruptRecord")
BATCH_READ_OPTIONS = ("selector", "since", "unpersisted", "splitBytes", "startingOffsets",
                      "endingOffsets", "failOnDataLoss", "ringSize", "timeout", "path",
                      *PARSE_OPTIONS)
STREAM_READ_OPTIONS = ("selector", "splitBytes", "startingOffsets", "maxBytesPerTrigger",
                       "failOnDataLoss", "ringSize", "timeout", "path", *PARSE_OPTIONS)

# What each kind of read takes, in the order messages list them.
READ_MODES = {"batch read": BATCH_READ_OPTIONS + CLIENT_OPTIONS + STORE_OPTIONS,
              "streaming read": STREAM_READ_OPTIONS + CLIENT_OPTIONS + STORE_OPTIONS}


@dataclass(frozen=True)
class ReadOptions:
    """A read's options, parsed and checked."""

    selector: str
    broker: str
    client: ClientConfig | None = None
    file_root: str | None = None
    file_only: bool = False
    since: int = 0  # unix seconds: persisted fragments older are skipped (batch)
    unpersisted: bool = True  # batch: also read what only the brokers' spools hold
    split_bytes: int = DEFAULT_SPLIT_BYTES  # 0: one task per journal
    starting_offsets: str = "earliest"  # "earliest", "latest" or JSON per journal
    ending_offsets: str = "latest"  # batch only
    max_bytes_per_trigger: int = 0  # streaming admission control; 0: no limit
    fail_on_data_loss: bool = True
    ring_size: int = DEFAULT_RING_SIZE
    timeout: float = 30.0
    mode: str = PERMISSIVE  # PERMISSIVE, DROPMALFORMED or FAILFAST, as Spark's JSON reader
    corrupt_column: str = CORRUPT_DEFAULT  # columnNameOfCorruptRecord


def check_known(options: Mapping[str, str], known: tuple[str, ...], what: str) -> None:
    """Refuse any option not in `known` (compared without case), naming the closest."""
    option_names.check_known(options, {what: known}, what)


def option(options: Mapping[str, str], name: str) -> str | None:
    """The value of `name`, whatever case the caller spelt it in."""
    for key, value in options.items():
        if key.lower() == name.lower():
            return value
    return None


def parse_bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = option(options, name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValidationError(f"option {name}", f"{value!r} is not true or false")


def parse_int(options: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    value = option(options, name)
    if value is None:
        return default
    try:
        parsed = int(value.strip())
    except ValueError:
        raise ValidationError(f"option {name}", f"{value!r} is not a whole number") from None
    if parsed < minimum:
        raise ValidationError(f"option {name}", f"{parsed} is below the least allowed, {minimum}")
    return parsed


def parse_float(options: Mapping[str, str], name: str, default: float) -> float:
    value = option(options, name)
    if value is None:
        return default
    try:
        parsed = float(value.strip())
    except ValueError:
        raise ValidationError(f"option {name}", f"{value!r} is not a number") from None
    if not parsed > 0:
        raise ValidationError(f"option {name}", f"{value!r} must be above 0")
    return parsed


def client_config(options: Mapping[str, str]) -> ClientConfig | None:
    """TLS files and authorization for the brokers, from the options (None: neither)."""
    tls = ClientTLS(cert_file=option(options, "tlsCertFile") or "",
                    key_file=option(options, "tlsKeyFile") or "",
                    ca_file=option(options, "tlsCaFile") or "")
    auth = CallAuth.from_settings(option(options, "authKeys") or "",
                                  option(options, "authToken") or "")
    if auth is None and tls == ClientTLS():
        return None
    return ClientConfig(tls=tls, auth=auth)


@dataclass(frozen=True)
class JournalOffsets:
    """startingOffsets or endingOffsets, parsed: an offset per journal named, and the rest's."""

    default: int = EARLIEST
    journals: dict[str, int] = field(default_factory=dict)

    def of(self, journal: str) -> int:
        """The journal's offset: a byte offset, EARLIEST or LATEST."""
        return self.journals.get(journal, self.default)


def parse_offsets(value: str, name: str, default: int) -> JournalOffsets:
    """`earliest`, `latest` or JSON `{"journal": offset}` (-2 earliest, -1 latest); journals
    the JSON does not name take `default`."""
    text = value.strip()
    if text.lower() in ("earliest", "latest"):
        return JournalOffsets(EARLIEST if text.lower() == "earliest" else LATEST)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise ValidationError(f"option {name}", f"{value!r} is not earliest, latest or a JSON "
                              "object of offsets by journal name, e.g. {\"acme/clicks\": 1024}")
    for journal, offset in parsed.items():
        if type(offset) is not int or offset < EARLIEST:
            raise ValidationError(f"option {name}", f"offset {offset!r} of journal {journal} "
                                  "is not a byte offset, -2 (earliest) or -1 (latest)")
    return JournalOffsets(default, dict(parsed))


def read_options(options: Mapping[str, str], *, streaming: bool | None) -> ReadOptions:
    """The options of a read, checked: unknown names and bad values are refused.

    `streaming=None` (the schema, asked before Spark says which read it is)
    takes the options of either kind of read.
    """
    option_names.check_known(options, READ_MODES, None if streaming is None
                             else "streaming read" if streaming else "batch read")
    selector = selector_of(options)
    file_only_default = os.environ.get(FILE_ONLY_ENV, "").lower() in TRUE
    starting = (option(options, "startingOffsets") or "earliest").strip()
    ending = (option(options, "endingOffsets") or "latest").strip()
    parse_offsets(starting, "startingOffsets", EARLIEST)  # Refused here rather than in a task.
    parse_offsets(ending, "endingOffsets", LATEST)
    return ReadOptions(
        selector=selector,
        broker=(option(options, "broker") or "").strip() or default_address(),
        client=client_config(options),
        file_root=option(options, "fileRoot") or os.environ.get(FILE_ROOT_ENV) or None,
        file_only=parse_bool(options, "fileOnly", file_only_default),
        since=parse_int(options, "since", 0),
        unpersisted=parse_bool(options, "unpersisted", True),
        split_bytes=parse_int(options, "splitBytes", DEFAULT_SPLIT_BYTES),
        starting_offsets=starting,
        ending_offsets=ending,
        max_bytes_per_trigger=max_bytes(options),
        fail_on_data_loss=parse_bool(options, "failOnDataLoss", True),
        ring_size=parse_int(options, "ringSize", DEFAULT_RING_SIZE, minimum=1),
        timeout=parse_float(options, "timeout", 30.0),
        mode=parse_mode(options),
        corrupt_column=option(options, "columnNameOfCorruptRecord") or CORRUPT_DEFAULT,
    )


# Selector syntax: a `load()` path with none of it is a journal's name (as Kafka's topic).
_SELECTOR_SYNTAX = re.compile(r"[=!(),\s]")


def selector_of(options: Mapping[str, str]) -> str:
    """The `selector` option, else the `load()` path: a selector, or a journal's name."""
    selector = (option(options, "selector") or "").strip()
    if selector:
        return selector
    path = (option(options, "path") or "").strip()
    if path and not _SELECTOR_SYNTAX.search(path):
        return f"name={path}"
    if not path:
        raise ValidationError("option selector", "a label selector or journal name is "
                              "required, e.g. .option(\"selector\", \"topic=clicks\") or "
                              ".load(\"acme/clicks\")")
    return path


def max_bytes(options: Mapping[str, str]) -> int:
    """maxBytesPerTrigger: a positive limit when given (0: none given, no limit)."""
    given = option(options, "maxBytesPerTrigger")
    if given is None:
        return 0
    try:
        return parse_int(options, "maxBytesPerTrigger", 0, minimum=1)
    except ValidationError:
        raise ValidationError("option maxBytesPerTrigger", f"{given!r} is not a positive whole "
                              "number of bytes; leave the option out for no limit") from None


def parse_mode(options: Mapping[str, str]) -> str:
    """The `mode` option, in any case (as Spark takes it)."""
    value = (option(options, "mode") or PERMISSIVE).strip()
    if value.upper() not in MODES:
        raise ValidationError("option mode", f"{value!r} is not one of {', '.join(MODES)}")
    return value.upper()
