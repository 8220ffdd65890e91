"""`gazctl local ...`: run etcd and brokers on this machine for development."""

from __future__ import annotations

import enum
import json
import shlex
from pathlib import Path

import typer

from gazctl.options import OutputFormat
from gazctl.render import stdout, table
from gazctl.usage import UsageError
from gazette_core.local import s3 as local_s3
from gazette_core.local import stack as local_stack

app = typer.Typer(help="Run a local Gazette stack (etcd, brokers and consumers) in the "
                  "background.",
                  no_args_is_help=True)

Dir = typer.Option(None, "--dir", help=f"Stack directory (default {local_stack.DEFAULT_DIR}).")


class Format(enum.StrEnum):
    table = "table"
    json = "json"


@app.command()
def up(directory: str | None = Dir,
       brokers: int = typer.Option(1, "--brokers", min=1, max=9, help="Number of brokers."),
       zones: int = typer.Option(1, "--zones", min=1, max=3, help="Spread brokers over zones."),
       s3: bool = typer.Option(False, "--s3", help="Also run an S3 emulator (moto) with a "
                               "bucket; `gazctl local env` prints its store URL."),
       auth_keys: str | None = typer.Option(
           None, "--auth-keys", help="Base64 keys (comma separated) the brokers verify tokens "
           "with; kept for later restarts. `gazctl local env` exports them for gazctl."),
       consumers: int = typer.Option(0, "--consumers", min=0, max=9,
                                     help="Number of consumer processes running --app."),
       consumer_app: str | None = typer.Option(
           None, "--app", help="The consumers' application as package.module:Attr, imported "
           "from the current directory; kept for later restarts."),
       ) -> None:
    """Start the stack, or restart any of its processes that is not running."""
    path = _stack_dir(directory)
    if zones > brokers:
        raise UsageError("--zones", f"{zones} zones need at least {zones} brokers "
                         f"(--brokers {brokers})")
    if consumer_app is not None and ":" not in consumer_app:
        raise UsageError("--app", f"{consumer_app!r} is not package.module:Attr")
    stack = local_stack.up(path, brokers=brokers, zones=zones, s3=s3, auth_keys=auth_keys,
                           consumers=consumers, app=consumer_app)
    stdout.print(f"local stack running in {path}", highlight=False)
    for row in stack.status():
        # Brokers and consumers serve gRPC and HTTP alike on their endpoint.
        stdout.print(f"  {row['name']:<10} pid {row['pid']:<8} {row['endpoint']}",
                     highlight=False)
    stdout.print(f"fragments are stored under {path / 'fragments'} (store URL file:///)",
                 highlight=False)
    if stack.s3_store is not None:
        stdout.print(f"or in S3: {stack.s3_store} (see `gazctl local env`)", highlight=False)


@app.command()
def env(directory: str | None = Dir) -> None:
    """Print `export` lines pointing gazctl and clients at the stack.

    BROKER_ADDRESS lists every broker and CONSUMER_ADDRESS every consumer; gazctl
    and the client library dial the first live one. A stack started with
    --auth-keys also gets BROKER_AUTH_KEYS and CONSUMER_AUTH_KEYS.
    """
    stack = _load(directory)
    # Every process: a live one is dialed, so killing one leaves the rest usable.
    stdout.out(f"export BROKER_ADDRESS={','.join(b.endpoint for b in stack.brokers)}")
    stdout.out(f"export ETCD_ADDRESS={stack.etcd.endpoint}")
    if stack.consumers:
        stdout.out(f"export CONSUMER_ADDRESS={','.join(c.endpoint for c in stack.consumers)}")
    # The brokers' --broker.file-root, for commands that reach file:// stores themselves.
    stdout.out(f"export BROKER_FILE_ROOT={shlex.quote(str(stack.directory / 'fragments'))}")
    if stack.auth_keys:
        # The consumers verify the same keys, and `gazctl shards` signs with CONSUMER_*'s.
        for side in ("BROKER", "CONSUMER"):
            stdout.out(f"export {side}_AUTH_KEYS={shlex.quote(stack.auth_keys)}")
    if stack.s3_store is not None:
        # The URL holds "?": quoted, so no shell takes it for a glob.
        stdout.out(f"export GAZETTE_S3_STORE={shlex.quote(stack.s3_store)}")
        for name, value in local_s3.ENV.items():
            stdout.out(f"export {name}={value}")


@app.command()
def status(directory: str | None = Dir, output: Format = OutputFormat(Format.table)) -> None:
    """Show each process of the stack, each broker's zone, and whether it is alive."""
    rows = _load(directory).status()
    if output is Format.json:
        stdout.out(json.dumps(rows))
        return
    table(["Role", "Name", "Zone", "PID", "Endpoint", "HTTP", "Alive"],
          [[str(r["role"]), str(r["name"]), str(r["zone"]), str(r["pid"]), str(r["endpoint"]),
            str(r["http"] or ""), "yes" if r["alive"] else "no"] for r in rows])


@app.command()
def down(directory: str | None = Dir) -> None:
    """Stop consumers (they hand off their shards), brokers (they persist their spools
    first), then the S3 emulator and etcd."""
    path = _stack_dir(directory)
    for name, graceful in local_stack.down(path):
        stdout.print(f"stopped {name}" + ("" if graceful else " (killed after timeout)"),
                     highlight=False)


def _stack_dir(directory: str | None) -> Path:
    """The stack directory `--dir` names, which must be a directory if it exists."""
    path = local_stack.resolve_dir(directory)
    if path.exists() and not path.is_dir():
        raise UsageError("--dir", f"{path} is not a directory")
    return path


def _load(directory: str | None) -> local_stack.Stack:
    path = _stack_dir(directory)
    stack = local_stack.Stack.load(path)
    if stack is None:
        raise local_stack.StackError(f"no local stack in {path}; start one with `gazctl local up`")
    return stack
