"""The SparkSession every gazette job runs in: small, quiet and without a web UI.

One session lives per process (Spark allows one SparkContext). `get_session`
hands back the running one when it already uses the asked-for master and
otherwise stops it and starts another, so tests and long-lived callers can
run several jobs without paying JVM start-up each time.

The JVM a session starts writes its console output (Spark's log lines and the
JVM's own warnings, the Python workers' stderr in local mode) to `jvm_log()`,
by default `~/.local/state/gazette/spark.log`, never to the terminal: a
command's own output (a table, JSON) is all that reaches stdout and stderr.
Every session handed out knows the `gazette` data source (datasource.register).
Under spark-submit the JVM is spark-submit's and its output stays where it is.

Errors a Python worker raises (a data source's planning, a task) reach the
caller as the exception's line alone, not its Python traceback: Spark's
`hideTraceback` conf for planning and tasks, and SPARK_HIDE_TRACEBACK in the
JVM's environment for the workers Spark starts without that conf (a
streaming source's). `str(exc)` of a refused read is then Spark's prefix and
our one line (`[PYTHON_DATA_SOURCE_ERROR] ...: ValidationError: option ...`).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from gazette_core.errors import GazetteError

if TYPE_CHECKING:  # pyspark is imported when a session is built, not with every gazctl run.
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
JVM_LOG_ENV = "GAZETTE_SPARK_LOG"

HIDE_TRACEBACK_CONF = "spark.sql.execution.pyspark.udf.hideTraceback.enabled"
# What PySpark's workers read; Spark sets it from the conf above for planning and tasks,
# but not for a streaming source's worker, which inherits the JVM's environment.
HIDE_TRACEBACK_ENV = "SPARK_HIDE_TRACEBACK"

# Jobs move lists of fragment names, not data: keep the JVMs small.
BASE_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "512m",
    "spark.executor.memory": "512m",
    "spark.sql.shuffle.partitions": "4",
    "spark.python.worker.reuse": "true",
    # A worker's error is its exception's line, without the Python traceback.
    HIDE_TRACEBACK_CONF: "true",
}


def is_loopback_master(master: str) -> bool:
    """Whether `master` runs on this machine only: local modes and loopback URLs."""
    if master == "local" or master.startswith("local["):
        return True
    host = urlsplit(master).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def session_conf(master: str, app_name: str, extra: Mapping[str, str] | None = None) -> SparkConf:
    """The configuration `get_session` starts a session with."""
    from pyspark import SparkConf

    # Only what is asked for here: the builder merges spark-submit's settings itself.
    conf = SparkConf(loadDefaults=False).setMaster(master).setAppName(app_name)
    for key, value in BASE_CONF.items():
        conf.set(key, value)
    # Executors run the same interpreter (and so the same installed packages) as the driver.
    conf.set("spark.pyspark.python", os.environ.get("PYSPARK_PYTHON", sys.executable))
    conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}")
    if is_loopback_master(master):
        # Nothing leaves the machine: bind the driver to loopback so executors on this
        # host reach it, whatever the host name resolves to.
        conf.set("spark.driver.host", "127.0.0.1")
        conf.set("spark.driver.bindAddress", "127.0.0.1")
    for key, value in (extra or {}).items():
        conf.set(key, value)
    return conf


# How long a standalone master gets to accept a connection. Spark itself retries its
# registration for about a minute and then fails with pages of JVM traces.
CONNECT_TIMEOUT = 5.0


class SparkMasterUnreachable(GazetteError):
    """A `spark://` master that does not accept connections."""

    hint = "start the master, or run the deletes in this process with --spark-master local[*]"


def check_master(master: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Connect to every host:port of a `spark://` master URL, before Spark tries to.

    Local modes and other cluster managers are left to Spark.
    """
    if not master.startswith("spark://"):
        return
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                pass
        except (OSError, ValueError) as exc:
            reason = f"no connection within {timeout:g}s" if isinstance(exc, TimeoutError) else (
                getattr(exc, "strerror", None) or str(exc))
            raise SparkMasterUnreachable(
                f"cannot reach the Spark master at {master}: {reason}") from None


_session: SparkSession | None = None


def get_session(master: str = DEFAULT_MASTER, app_name: str = "gazette",
                extra: Mapping[str, str] | None = None) -> SparkSession:
    """A running SparkSession on `master`, reusing this process's session when it matches."""
    global _session
    if _session is not None:
        if _session.sparkContext.master == master and not extra:
            return _session
        stop_session()
    check_master(master)
    from pyspark.sql import SparkSession

    # The executors' interpreter (the conf key only reaches spark-submit launches): by
    # default this one, so they import the same installed packages as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if is_loopback_master(master):
        # Read by the JVM at launch; keeps Spark from picking an outward interface.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault(HIDE_TRACEBACK_ENV, "1")  # Inherited by the JVM's Python workers.
    conf = session_conf(master, app_name, extra)
    _start_jvm(conf)
    session = SparkSession.builder.config(conf=conf).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    from spark_jobs.datasource import register

    register(session)  # `format("gazette")` works in every session handed out here.
    _session = session
    return session


def jvm_log() -> Path:
    """Where the JVM's console output goes: $GAZETTE_SPARK_LOG, else the gazette state dir."""
    if path := os.environ.get(JVM_LOG_ENV):
        return Path(path)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "gazette" / "spark.log"


def _start_jvm(conf: SparkConf) -> None:
    """Start this process's Spark JVM with its output in `jvm_log()`, unless it runs.

    PySpark starts the JVM with the first SparkContext and keeps it for later ones;
    started here instead, its stdout and stderr are the log file, not ours.
    """
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return  # Running already, or spark-submit's.
    log = jvm_log()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def stop_session() -> None:
    """Stop the session `get_session` started, if it runs."""
    global _session
    if _session is not None:
        _session.stop()
        _session = None
