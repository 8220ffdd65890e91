"""Our processes started as the rendered manifests' containers would be, outside Kubernetes.

A container's command, args and environment are taken from the render and
expanded as Kubernetes expands them. Only what Kubernetes itself would
supply is filled in here: the downward-API fields (pod IP 127.0.0.1, a
pod-like name, a node name, the pod template's labels), the ConfigMaps and
Secrets mounted under the image's home (written under a temporary home), and
the image's own PATH, HOME and PYTHONPATH. The caller substitutes the
addresses of Services (Etcd, the brokers) and, when 8080 is taken, the port.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from gazette_core.testing.etcd import free_port
from tests.deploy.manifests import (
    IMAGE_HOME,
    REPO,
    Obj,
    container,
    container_env,
    container_port,
    expand,
    one,
)

POD_IP = "127.0.0.1"
NODE_NAME = "node-1"
STOP_S = 60.0


@dataclass
class Pod:
    """A started container: its process, port, probe, scrape target, env and logs."""

    name: str
    proc: asyncio.subprocess.Process
    port: int
    ready_path: str
    metrics_path: str
    env: dict[str, str]
    stderr: Path
    exit_code: int | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{POD_IP}:{self.port}"

    def log_lines(self) -> list[str]:
        return [line for line in self.stderr.read_text().splitlines() if line.strip()]


def port_is_free(port: int) -> bool:
    """Whether `port` can be listened on, on every interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("", port))
        except OSError:
            return False
        return True


def mount_under_home(objs: list[Obj], workload: Obj, c: Obj, home: Path) -> None:
    """Write the ConfigMaps and Secrets `c` mounts under the image's home into `home`."""
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"].get("volumes", [])}
    present = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    for mount in c.get("volumeMounts", []):
        if not mount["mountPath"].startswith(IMAGE_HOME + "/"):
            continue
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            obj = present.get(("ConfigMap", volume["configMap"]["name"]))
            files = dict(obj["data"]) if obj else {}
        else:
            obj = present.get(("Secret", volume["secret"]["secretName"]))
            files = {k: base64.b64decode(v).decode() for k, v in obj["data"].items()} \
                if obj else {}
        target = home / Path(mount["mountPath"]).relative_to(IMAGE_HOME)
        target.mkdir(parents=True, exist_ok=True)
        for key, text in files.items():
            (target / key).write_text(text)


def zone_of_node(home: Path) -> str:
    """What the mounted zone map says of NODE_NAME ("local" without one), as the command asks."""
    script = home / ".config" / "zonemap" / "node-zone.sh"
    if not script.exists():
        return "local"
    return subprocess.run(["sh", str(script), NODE_NAME], capture_output=True, check=True,
                          text=True).stdout.strip()


@asynccontextmanager
async def running(objs: list[Obj], deployment: str, container_name: str, port_flag: str,
                  services: Mapping[str, str], workdir: Path) -> AsyncIterator[Pod]:
    """The container, started (see `start`) and ready; stopped with SIGTERM on exit, its
    exit status kept in `exit_code` (killed, and an error, if it does not stop)."""
    pod = await start(objs, deployment, container_name, port_flag, services, workdir)
    try:
        await wait_ready(pod)
        yield pod
    finally:
        pod.exit_code = await stop(pod)


async def start(objs: list[Obj], deployment: str, container_name: str, port_flag: str,
                services: Mapping[str, str], workdir: Path) -> Pod:
    """Start the container `container_name` of Deployment `deployment` as a process.

    `services` replaces environment values naming Services (e.g. ETCD_ADDRESS);
    each must be a variable the manifest sets. The service port is kept when it
    is free, else replaced by a free one in `port_flag`'s argument, the probe and
    the scrape annotation alike.
    """
    workload = one(objs, "Deployment", deployment)
    c = container(workload, container_name)
    template = workload["spec"]["template"]["metadata"]
    name = f"{deployment}-5d8f7c9b4-{container_name[:3]}x7q"
    pod = {"status.podIP": POD_IP, "metadata.name": name, "spec.nodeName": NODE_NAME,
           "labels": template["labels"]}
    env = container_env(c, pod)
    assert set(services) <= set(env), set(services) - set(env)
    env.update(services)
    (declared,) = [p["containerPort"] for p in c["ports"]]
    port = declared if port_is_free(declared) else free_port()
    argv = [expand(arg, env) for arg in [*c.get("command", []), *c.get("args", [])]]
    spelled = f"{port_flag} {declared}"
    assert sum(arg.count(spelled) for arg in argv) == 1, argv
    argv = [arg.replace(spelled, f"{port_flag} {port}") for arg in argv]
    probe = c["readinessProbe"]["httpGet"]
    assert container_port(c, probe["port"]) == declared
    annotations = template["annotations"]
    assert int(annotations["prometheus.io/port"]) == declared
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    mount_under_home(objs, workload, c, home)
    image_env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                 "HOME": str(home), "PYTHONPATH": str(REPO)}
    stderr = workdir / "stderr"
    with stderr.open("wb") as err, (workdir / "stdout").open("wb") as out:
        proc = await asyncio.create_subprocess_exec(*argv, env={**image_env, **env},
                                                    stdout=out, stderr=err, cwd=home)
    return Pod(name, proc, port, probe["path"], annotations["prometheus.io/path"], env, stderr)


async def wait_ready(pod: Pod, limit: float = 60.0) -> None:
    """Poll the readiness probe until it answers 200, as the kubelet does."""
    url = pod.endpoint + pod.ready_path
    async with aiohttp.ClientSession() as session, asyncio.timeout(limit):
        while True:
            assert pod.proc.returncode is None, pod.stderr.read_text()[-2000:]
            try:
                async with session.get(url) as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return resp.status, await resp.text()


async def stop(pod: Pod) -> int:
    """SIGTERM, as Kubernetes stops a container; its exit status."""
    if pod.proc.returncode is None:
        pod.proc.send_signal(signal.SIGTERM)
    try:
        async with asyncio.timeout(STOP_S):
            return await pod.proc.wait()
    except TimeoutError:
        pod.proc.kill()
        await pod.proc.wait()
        raise


def json_log_lines(pod: Pod) -> list[dict[str, object]]:
    """Every stderr line, each of which must be a JSON object with a level and a message."""
    objects = []
    for line in pod.log_lines():
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        assert isinstance(obj, dict) and {"level", "msg"} <= set(obj), line
        objects.append(obj)
    return objects
