"""The local stack behind `gazctl local`: etcd, N brokers and M consumers as background processes.

State lives in `DIR/stack.json` (pids, ports, ids), logs in `DIR/logs/`, etcd
data in `DIR/etcd/` and fragments in `DIR/fragments/` (the root of `file://`
stores). With `s3`, a moto S3 emulator runs beside them (see local/s3.py).
Ports and broker ids are chosen once, so a restarted process keeps its
identity and data. Started stacks are recorded in
`~/.local/state/gazette/active-stack`, most recently started first, and
`down` strikes a stack off. The active stack, where gazctl commands without
an address go, is the first recorded one that runs (a broker is alive), else
the default stack if it runs: a stopped stack is never where commands go.
Consumer processes are planned and started by local/consumers.py's rules.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from gazette_core.allocator.keys import member_key
from gazette_core.errors import GazetteError
from gazette_core.local import consumers as local_consumers
from gazette_core.local import etcd_http, processes
from gazette_core.local import s3 as local_s3
from gazette_core.local.probe import broker_serves
from gazette_core.server import auth
from gazette_core.testing.etcd import free_port

STATE_FILE = "stack.json"
POINTER = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "gazette"
DEFAULT_DIR = POINTER / "local"
BROKER_MARKER = "gazette_core.broker.main"
LEASE_S = 10
# --broker.persist-on-stop-timeout of local brokers: below `down`'s wait, so a
# store that never recovers cannot keep a broker from exiting (or restarting).
PERSIST_ON_STOP_S = 10.0
# How often `up` restarts a broker that exits while it waits for the brokers.
RESTARTS_WHILE_WAITING = 3
# Given to brokers explicitly: the stack finds their member keys under it.
ETCD_PREFIX = "/gazette/cluster"


class StackError(GazetteError):
    """A local stack process failed to start or to become ready."""


@dataclass
class Process:
    role: str
    name: str
    port: int
    pid: int = 0
    peer_port: int = 0
    zone: str = "local"
    # Unused: brokers and consumers serve HTTP on their one port. Kept so that the
    # state files of stacks planned with separate HTTP ports still load.
    http_port: int = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def http(self) -> str | None:
        """Where the process serves HTTP (a broker's content gateway, /debug/): its endpoint."""
        return self.endpoint if self.role in ("broker", "consumer") else None

    @property
    def marker(self) -> str:
        return {"etcd": "etcd", "s3": local_s3.MARKER,
                "consumer": local_consumers.MARKER}.get(self.role, BROKER_MARKER)


@dataclass
class Stack:
    directory: Path
    processes: list[Process] = field(default_factory=list)
    # TTL in seconds of each broker's Etcd lease (how long a dead broker keeps its journals).
    lease: int = LEASE_S
    # The brokers' --broker.auth-keys ("": no authorization).
    auth_keys: str = ""
    # The consumers' application (package.module:Attr), and the directory it imports from.
    app: str = ""
    app_path: str = ""

    @property
    def etcd(self) -> Process:
        return next(p for p in self.processes if p.role == "etcd")

    @property
    def brokers(self) -> list[Process]:
        return [p for p in self.processes if p.role == "broker"]

    @property
    def consumers(self) -> list[Process]:
        return [p for p in self.processes if p.role == "consumer"]

    @property
    def s3(self) -> Process | None:
        """The S3 emulator, if the stack was started with one."""
        return next((p for p in self.processes if p.role == "s3"), None)

    @property
    def s3_store(self) -> str | None:
        """The store URL of the emulator's bucket, if the stack has one."""
        return local_s3.store_url(self.s3.endpoint) if self.s3 is not None else None

    def save(self) -> None:
        data = {"lease": self.lease, "auth_keys": self.auth_keys, "app": self.app,
                "app_path": self.app_path, "processes": [asdict(p) for p in self.processes]}
        tmp = self.directory / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(self.directory / STATE_FILE)

    @classmethod
    def load(cls, directory: Path) -> Stack | None:
        path = directory / STATE_FILE
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        return cls(directory, [Process(**p) for p in data["processes"]],
                   int(data.get("lease", LEASE_S)), str(data.get("auth_keys", "")),
                   str(data.get("app", "")), str(data.get("app_path", "")))

    def status(self) -> list[dict[str, object]]:
        return [{"role": p.role, "name": p.name,
                 "zone": p.zone if p.role in ("broker", "consumer") else "",
                 "pid": p.pid, "endpoint": p.endpoint, "http": p.http,
                 "alive": processes.alive(p.pid, p.marker)}
                for p in self.processes]


def resolve_dir(directory: str | None) -> Path:
    return Path(directory).expanduser().resolve() if directory else DEFAULT_DIR


def up(directory: Path, brokers: int = 1, zones: int = 1, timeout: float = 60.0,
       activate: bool = True, lease: int | None = None, s3: bool = False,
       auth_keys: str | None = None, consumers: int = 0, app: str | None = None) -> Stack:
    """Start (or restart the dead processes of) the stack in `directory`.

    With `activate`, later gazctl commands default to this stack's brokers.
    `lease` sets the brokers' Etcd lease TTL in seconds; it is kept in the
    stack's state, so later restarts use it too (default LEASE_S). Brokers
    already running keep the lease they were started with. `s3` adds the S3
    emulator for good; brokers already running are restarted to get its
    credentials. `auth_keys` (kept like `lease`) turns authorization on for
    brokers started from then on. `consumers` processes run the application
    `app` (package.module:Attr, kept like `lease`, imported from the current
    directory); they start once the brokers serve.
    """
    if zones > brokers:
        raise StackError(f"{zones} zones need at least {zones} brokers, not {brokers}")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "fragments").mkdir(exist_ok=True)
    stack = Stack.load(directory) or Stack(directory)
    if lease is not None:
        stack.lease = lease
    if auth_keys is not None:
        auth.parse_keys(auth_keys)  # bad keys fail here, not in every broker's log
        stack.auth_keys = auth_keys
    if app is not None:
        stack.app, stack.app_path = app, os.getcwd()
    if consumers and not stack.app:
        raise StackError("consumers need an application: pass --app package.module:Attr")
    added_s3 = _plan(stack, brokers, zones, s3)
    _plan_consumers(stack, consumers, zones)
    stack.save()
    if not processes.alive(stack.etcd.pid, stack.etcd.marker):
        stack.etcd.pid = processes.spawn(_etcd_argv(stack), directory / "logs" / "etcd.log")
        stack.save()
    _wait(lambda: etcd_http.healthy(stack.etcd.endpoint), timeout, "etcd",
          directory / "logs" / "etcd.log")
    _start_s3(stack, timeout)
    for b in stack.brokers:
        if added_s3:
            processes.stop(b.pid, b.marker, timeout)
        _start_if_dead(stack, b)
    for b in stack.brokers:
        _wait(_ready(stack, b), timeout, b.name, directory / "logs" / f"{b.name}.log")
    for c in stack.consumers:
        _start_if_dead(stack, c)
    for c in stack.consumers:
        _wait(_ready(stack, c), timeout, c.name, directory / "logs" / f"{c.name}.log")
    if activate:
        _set_active(directory)
    return stack


def _plan(stack: Stack, brokers: int, zones: int, s3: bool) -> bool:
    """Give a new stack its etcd, any missing brokers and (with `s3`) the S3 emulator
    stable ports and names; True when the emulator was added just now."""
    if not any(p.role == "etcd" for p in stack.processes):
        stack.processes.append(Process("etcd", "etcd", free_port(), peer_port=free_port()))
    added_s3 = s3 and stack.s3 is None
    if added_s3:
        stack.processes.append(Process("s3", "s3", free_port()))
    for i in range(len(stack.brokers), brokers):
        zone = f"zone-{chr(ord('a') + i % zones)}" if zones > 1 else "local"
        stack.processes.append(Process("broker", f"broker-{i + 1}", free_port(), zone=zone))
    return added_s3


def _plan_consumers(stack: Stack, consumers: int, zones: int) -> None:
    """Give any missing consumer processes stable ports and names."""
    for i in range(len(stack.consumers), consumers):
        zone = f"zone-{chr(ord('a') + i % zones)}" if zones > 1 else "local"
        stack.processes.append(Process("consumer", f"consumer-{i + 1}", free_port(), zone=zone))


def _start_s3(stack: Stack, timeout: float) -> None:
    """Start the S3 emulator unless it runs (or is not planned), then ensure its bucket."""
    s3 = stack.s3
    if s3 is None:
        return
    log = stack.directory / "logs" / "s3.log"
    if not processes.alive(s3.pid, s3.marker):
        s3.pid = processes.spawn(local_s3.argv(s3.port), log)
        stack.save()
    _wait(lambda: local_s3.serves(s3.endpoint), timeout, "s3", log)
    local_s3.ensure_bucket(s3.endpoint)


def _etcd_argv(stack: Stack) -> list[str]:
    e = stack.etcd
    peer = f"http://127.0.0.1:{e.peer_port}"
    return ["etcd", "--name", "local", "--data-dir", str(stack.directory / "etcd"),
            "--listen-client-urls", e.endpoint, "--advertise-client-urls", e.endpoint,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"local={peer}", "--log-level", "warn"]


def _broker_argv(stack: Stack, b: Process) -> list[str]:
    return [sys.executable, "-m", BROKER_MARKER,
            "--broker.host", "127.0.0.1", "--broker.port", str(b.port),
            "--broker.zone", b.zone, "--broker.id", b.name,
            "--broker.file-root", str(stack.directory / "fragments"),
            "--etcd.address", stack.etcd.endpoint, "--etcd.prefix", ETCD_PREFIX,
            "--etcd.lease", str(stack.lease),
            "--broker.persist-on-stop-timeout", str(PERSIST_ON_STOP_S),
            "--log.level", "info"]


def _forget_crashed(stack: Stack, b: Process) -> None:
    """End the lease of a broker that died without revoking it (killed, or crashed).

    Its member key would otherwise outlive it by up to its lease TTL, and the restarted
    broker, which reuses the name, waits for that key to go before it joins. The
    old process is known to be gone, so expiring its lease early is safe.
    """
    etcd_http.revoke_lease_of(stack.etcd.endpoint, member_key(ETCD_PREFIX, b.zone, b.name))


def _broker_env(stack: Stack) -> dict[str, str]:
    # Keys go by environment rather than argv, out of `ps`; set even when empty,
    # so a BROKER_AUTH_KEYS exported in the caller's shell does not leak in.
    return {**(local_s3.ENV if stack.s3 is not None else {}), "BROKER_AUTH_KEYS": stack.auth_keys}


def _start_if_dead(stack: Stack, b: Process) -> None:
    if processes.alive(b.pid, b.marker):
        return
    log = stack.directory / "logs" / f"{b.name}.log"
    if b.role == "consumer":
        local_consumers.forget_crashed(stack, b)
        b.pid = processes.spawn(local_consumers.argv(stack, b), log,
                                env=local_consumers.env(stack))
    else:
        _forget_crashed(stack, b)
        b.pid = processes.spawn(_broker_argv(stack, b), log, env=_broker_env(stack))
    stack.save()


def _ready(stack: Stack, b: Process) -> Callable[[], bool]:
    """Whether `b` serves; one that exited meanwhile (e.g. it had just lost its
    Etcd lease when etcd came back) is started again, a few times at most, so
    one that cannot start fails with its log rather than in a loop."""
    restarts = RESTARTS_WHILE_WAITING

    def ready() -> bool:
        nonlocal restarts
        if restarts and not processes.alive(b.pid, b.marker):
            restarts -= 1
            _start_if_dead(stack, b)
        if b.role == "consumer":
            return local_consumers.serves(b.endpoint, auth_keys=stack.auth_keys)
        return broker_serves(b.endpoint, auth_keys=stack.auth_keys)
    return ready


def _wait(ready: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
    raise StackError(f"{what} did not become ready within {timeout:.0f}s; log tail:\n{tail}")


def down(directory: Path, timeout: float = 30.0) -> list[tuple[str, bool]]:
    """Stop consumers, then brokers (SIGTERM: they hand off shards and persist spools),
    then the S3 emulator and etcd."""
    stack = Stack.load(directory)
    if stack is None:
        raise StackError(f"no local stack in {directory}")
    results = [(p.name, processes.stop(p.pid, p.marker, timeout))
               for p in [*stack.consumers, *stack.brokers]]
    if stack.s3 is not None:
        results.append(("s3", processes.stop(stack.s3.pid, stack.s3.marker, timeout)))
    results.append(("etcd", processes.stop(stack.etcd.pid, stack.etcd.marker, timeout)))
    _forget(directory)
    return results


ACTIVE_FILE = "active-stack"


def _recorded() -> list[Path]:
    """The stack directories `up` recorded, most recently started first."""
    try:
        text = (POINTER / ACTIVE_FILE).read_text()
    except OSError:
        return []
    return [Path(line) for line in text.splitlines() if line.strip()]


def _record(directories: list[Path]) -> None:
    POINTER.mkdir(parents=True, exist_ok=True)
    kept = [d for d in dict.fromkeys(directories) if (d / STATE_FILE).exists()]
    tmp = POINTER / (ACTIVE_FILE + ".tmp")
    tmp.write_text("\n".join(str(d) for d in kept))
    tmp.replace(POINTER / ACTIVE_FILE)


def _set_active(directory: Path) -> None:
    _record([directory, *_recorded()])


def _forget(directory: Path) -> None:
    """Strike a stopped stack off, so the stack started before it is active again."""
    if directory in _recorded():
        _record([d for d in _recorded() if d != directory])


def _known_stacks() -> list[Stack]:
    """Every recorded stack, most recent first, then the default stack."""
    loaded = (Stack.load(d) for d in dict.fromkeys([*_recorded(), DEFAULT_DIR]))
    return [stack for stack in loaded if stack is not None]


def active_stack() -> Stack | None:
    """The most recently started stack that runs, else the default one if it runs."""
    for stack in _known_stacks():
        if any(processes.alive(b.pid, b.marker) for b in stack.brokers):
            return stack
    return None


def active_broker_address() -> str | None:
    """The first live broker of the active stack, if a stack runs."""
    return _first_live("broker")


def active_consumer_address() -> str | None:
    """The first live consumer of the active stack, if a stack runs."""
    return _first_live("consumer")


def _first_live(role: str) -> str | None:
    stack = active_stack()
    if stack is None:
        return None
    for p in stack.processes:
        if p.role == role and processes.alive(p.pid, p.marker):
            return p.endpoint
    return None


def fragments_dir_of(address: str) -> Path | None:
    """The file root of the local stack whose broker `address` is, if any.

    Hosts match loosely (localhost and 127.0.0.1 are one host); ports exactly.
    """
    if not _is_loopback(address):
        return None
    port = urlsplit(address).port
    for stack in _known_stacks():
        if any(b.port == port for b in stack.brokers):
            return stack.directory / "fragments"
    return None


def _is_loopback(address: str) -> bool:
    host = urlsplit(address).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1")
