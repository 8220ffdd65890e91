"""The standalone cluster fixture never talks to a daemon on a port other than the one chosen."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from gazette_core.testing.etcd import free_port
from tests.spark_jobs import cluster_support
from tests.spark_jobs.cluster_support import PortTaken, spark_home, start, stop


def test_a_taken_master_port_fails_the_start_instead_of_moving_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        ports = iter([taken])
        monkeypatch.setattr(cluster_support, "free_port", lambda: next(ports, None) or free_port())
        procs: list[subprocess.Popen[bytes]] = []
        try:
            with pytest.raises(PortTaken, match=r"master-0\.log"):
                start(spark_home(), tmp_path, 0, procs)
        finally:
            stop(procs)
