"""The etcd harness: a real server on loopback that stops cleanly."""

from __future__ import annotations

import socket
from pathlib import Path

from gazette_core.keyspace.etcd_util import connect
from gazette_core.testing.etcd import EtcdServer, free_port


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        assert sock.getsockname() == ("127.0.0.1", port)


def test_free_ports_are_distinct_and_below_the_ephemeral_range() -> None:
    # Outgoing connections take source ports from the ephemeral range, so a
    # restarted stack process could find a port from there already taken.
    first_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(1024 <= port < first_ephemeral for port in ports)


async def test_server_serves_and_stop_removes_its_directory() -> None:
    with EtcdServer() as server:
        assert server.endpoint == f"http://127.0.0.1:{server.client_port}"
        data_dir = server._dir
        assert data_dir is not None and data_dir.exists()
        client = await connect(server.endpoint)
        await client.put(b"k", b"v")
        got = await client.get(b"k")
        assert got is not None and got.value == b"v"
        await client.close()
    assert not Path(data_dir).exists()
