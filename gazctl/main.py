"""gazctl's entry point: it owns Ctrl-C from its first line, then runs the command tree.

A background job of a non-interactive shell (`gazctl journals read -b ... &` in
a script) and many CI runners start their commands with SIGINT ignored, and
Python keeps an inherited ignore: a Ctrl-C or `kill -INT` would never reach
the command, and a blocking one would run on forever. So the entry point
installs gazctl's own handler (`gazctl.interrupts`) whatever it inherited,
before the command tree is imported (most of a second on a loaded machine):
a Ctrl-C cancels a running command, which still flushes what it read and
writes its offsets, and exits at once with 130 at any other moment.

Every command ends the process with `os._exit(code)` once stdout and stderr
are flushed (and a Spark session it started is stopped), skipping the
interpreter's shutdown: the command closed its channels and files on its way
out. The shutdown would restore Python's default Ctrl-C action, so a Ctrl-C
just as a command finishes would kill it by the signal rather than let it
exit with its code; and CPython (3.11, under `python -m`) ends a process by
SIGINT instead of with its exit code if a KeyboardInterrupt ever left code
run by `exec()` or `eval()` of a string (as dataclasses are built), even when
it was caught; Spark's own Ctrl-C handler, in place during `journals prune`,
raises one wherever the signal lands.

SIGUSR1 writes every thread's stack to stderr, so a gazctl that does not exit
can be asked what it waits for (`kill -USR1 PID`).

gRPC's own log lines (a failed TLS handshake, say) are kept off gazctl's
stderr, where a failure is one line that already carries gRPC's reason;
GRPC_VERBOSITY set by the user still applies. Processes that gazctl starts
(`local up`) log as usual.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys

from gazctl.interrupts import take_over_ctrl_c

INTERRUPTED = 130  # gazctl.usage.INTERRUPTED, whose module is not imported this early


def _quiet_grpc() -> None:
    """Load gRPC with its logging off unless GRPC_VERBOSITY asks otherwise.

    gRPC reads the variable once, when it loads; it is taken out again so
    that processes gazctl starts do not inherit it.
    """
    import gazette_core  # noqa: F401  (before gRPC loads: it turns gRPC's fork support off)

    if "GRPC_VERBOSITY" in os.environ:
        return
    os.environ["GRPC_VERBOSITY"] = "NONE"
    try:
        import grpc  # noqa: F401
    finally:
        del os.environ["GRPC_VERBOSITY"]


def main() -> None:
    """Console-script entry point (and `python -m gazctl.main`)."""
    take_over_ctrl_c()
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    _quiet_grpc()
    from gazctl.cli import run_cli  # the slow part of starting up

    code = run_cli()
    if code != INTERRUPTED and "spark_jobs.session" in sys.modules:
        from spark_jobs.session import stop_session

        stop_session()  # the JVM would stop by itself; this ends a cluster's app cleanly
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a broken pipe, or closed: nothing to keep
            pass
    os._exit(code)


if __name__ == "__main__":
    main()
