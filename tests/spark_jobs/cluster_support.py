"""A standalone Spark master and worker for the tests that run jobs on a real cluster.

Ports are chosen free, but another process may take one before the master or
worker binds it. Spark would then move to the next port (and the fixture
would talk to whatever holds the one it chose): `spark.port.maxRetries=0`
makes the daemon fail instead, and the fixture starts both again on other
ports. The master's own answer (its URL in `/json/`) confirms which master
the web UI port reached.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gazette_core.testing.etcd import free_port
from spark_jobs.session import stop_session

ATTEMPTS = 5
START_TIMEOUT = 60.0
# A taken port fails the daemon rather than moving it to the next one.
FAIL_ON_TAKEN_PORT = "-Dspark.port.maxRetries=0"
# The master's REST submission server would want its fixed port 6066, which another
# cluster on the machine may hold; jobs here are submitted without it.
MASTER_OPTS = f"{FAIL_ON_TAKEN_PORT} -Dspark.master.rest.enabled=false"
PORT_TAKEN = (b"BindException", b"Address already in use")


@dataclass
class Cluster:
    master: str
    spark_home: Path


class PortTaken(Exception):
    """A port chosen for the master or worker was taken before it bound it."""


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def alive_workers(ui_port: int, master: str) -> int:
    """The ALIVE workers the master `master` reports on its web UI at `ui_port`."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as resp:
            state = json.load(resp)
    except (OSError, ValueError):
        return 0
    if state.get("url") != master:  # Another process's UI: not this cluster.
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in reversed(procs):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in reversed(procs):
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def start(home: Path, work: Path, attempt: int, procs: list[subprocess.Popen[bytes]]) -> str:
    """Start a master and a worker on fresh ports (into `procs`); the master's URL once
    a worker is alive. PortTaken when either could not bind a port chosen for it."""
    port, ui, worker_ui = free_port(), free_port(), free_port()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_WORKER_DIR": str(work / "worker"), "SPARK_LOG_DIR": str(work),
           "PYSPARK_PYTHON": sys.executable, "SPARK_MASTER_OPTS": MASTER_OPTS,
           "SPARK_WORKER_OPTS": FAIL_ON_TAKEN_PORT}
    spark_class = str(home / "bin" / "spark-class")
    master = f"spark://127.0.0.1:{port}"
    logs = [work / f"master-{attempt}.log", work / f"worker-{attempt}.log"]
    commands = [
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
         "--port", str(port), "--webui-port", str(ui)],
        [spark_class, "org.apache.spark.deploy.worker.Worker", master,
         "--host", "127.0.0.1", "--cores", "2", "--memory", "1g",
         "--webui-port", str(worker_ui), "--work-dir", str(work / "worker")]]
    for command, path in zip(commands, logs, strict=True):
        with open(path, "wb") as log:
            procs.append(subprocess.Popen(command, env=env, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True))
    deadline = time.monotonic() + START_TIMEOUT
    while alive_workers(ui, master) < 1:
        for proc, path in zip(procs, logs, strict=True):
            text = path.read_bytes()
            # A daemon that failed to bind one of its ports may live on, half started.
            if any(sign in text for sign in PORT_TAKEN):
                raise PortTaken(path.name)
            assert proc.poll() is None, text.decode(errors="replace")[-3000:]
        assert time.monotonic() < deadline, "\n".join(
            path.read_text()[-3000:] for path in logs)
        time.sleep(0.2)
    return master


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A standalone Spark master and one worker, started from pyspark's own spark-class."""
    home = spark_home()
    work = tmp_path_factory.mktemp("spark")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for attempt in range(ATTEMPTS):
            try:
                master = start(home, work, attempt, procs)
                break
            except PortTaken:
                stop(procs)
                procs.clear()
        else:
            raise AssertionError(f"every one of {ATTEMPTS} starts found a chosen port taken")
        yield Cluster(master, home)
    finally:
        stop_session()  # The driver leaves the cluster before the cluster goes.
        stop(procs)
