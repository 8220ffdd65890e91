"""gazctl against a broker whose etcd is down: the broker's answer, not "cannot reach broker".

The broker runs in this process on its own etcd, which the test SIGKILLs;
gazctl runs as its own process, as a shell would run it.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from gazette_core.broker.service import Broker
from gazette_core.testing.broker import broker_config
from gazette_core.testing.etcd import EtcdServer

SPECS = """\
name: outage/one
replication: 1
fragment:
  length: 1048576
  compression_codec: NONE
  stores: [file:///]
  refresh_interval: 1m
"""


async def gazctl(*args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "BROKER_ADDRESS"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gazctl.main", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(60):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_apply_while_etcd_is_down_says_etcd_is_unavailable(tmp_path: Path) -> None:
    specs = tmp_path / "specs.yaml"
    specs.write_text(SPECS)
    with EtcdServer() as etcd:
        broker = Broker(broker_config(etcd.endpoint, str(tmp_path / "store")))
        await broker.start()
        try:
            etcd.kill()
            code, out, err = await gazctl("journals", "apply", "--specs", str(specs),
                                          "--broker.address", broker.endpoint)
        finally:
            await broker.stop()
    assert code == 1, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "etcd is unavailable" in lines[0], err
    assert "cannot reach broker" not in err
