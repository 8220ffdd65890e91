"""deploy/kustomize rendered by `kubectl kustomize`, and read as Kubernetes would read it."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
KUSTOMIZE = DEPLOY / "kustomize"
BASES = ["etcd", "broker", "consumer", "example-stream-sum"]
OVERLAYS = ["environment", "deploy-stream-sum"]
# The directory the image's user has as HOME, where the manifests mount configuration.
IMAGE_HOME = "/home/gazette"

Obj = dict[str, Any]


@cache
def _rendered(directory: str) -> tuple[Obj, ...]:
    proc = subprocess.run(["kubectl", "kustomize", directory], capture_output=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return tuple(doc for doc in YAML(typ="safe").load_all(proc.stdout) if doc)


def render(path: Path) -> list[Obj]:
    """The objects `kubectl kustomize path` prints."""
    return list(_rendered(str(path)))


def base(name: str) -> list[Obj]:
    return render(KUSTOMIZE / "bases" / name)


def overlay(name: str) -> list[Obj]:
    return render(KUSTOMIZE / "test" / name)


def one(objs: list[Obj], kind: str, name: str) -> Obj:
    """The object of `kind` named `name`."""
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name, [(o["kind"], o["metadata"]["name"]) for o in objs])
    return found[0]


def container(workload: Obj, name: str) -> Obj:
    """The container `name` of a Deployment's, StatefulSet's or Job's pod template."""
    (found,) = [c for c in workload["spec"]["template"]["spec"]["containers"]
                if c["name"] == name]
    return found


def container_port(c: Obj, port: int | str) -> int:
    """A probe's port, a number or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in c.get("ports", []) if p.get("name") == port]
    return int(number)


_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: a defined VAR is replaced, `$$` is a `$`."""
    def one_ref(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _REF.sub(one_ref, text)


def field_ref(path: str, pod: Mapping[str, Any]) -> str:
    """A downward-API field of the pod: `pod` maps field paths to values, labels included."""
    label = re.fullmatch(r"metadata\.labels\['(.+)'\]", path)
    if label:
        return str(pod["labels"].get(label.group(1), ""))
    return str(pod[path])


def container_env(c: Obj, pod: Mapping[str, Any]) -> dict[str, str]:
    """The container's environment as Kubernetes gives it, in order, expanded."""
    env: dict[str, str] = {}
    for var in c.get("env", []):
        if "valueFrom" in var:
            env[var["name"]] = field_ref(var["valueFrom"]["fieldRef"]["fieldPath"], pod)
        else:
            env[var["name"]] = expand(str(var.get("value", "")), env)
    return env


def config_map_files(objs: list[Obj], name: str) -> dict[str, str]:
    return dict(one(objs, "ConfigMap", name)["data"])
