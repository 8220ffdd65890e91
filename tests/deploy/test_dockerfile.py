"""deploy/Dockerfile's shape: Debian and PyPI only, the project installed, gazette on 8080.

No image is built here (that needs a Docker daemon); the instructions are read
as Docker reads them, line continuations joined.
"""

from __future__ import annotations

import json
import re
import tomllib

from tests.deploy.manifests import DEPLOY, REPO, base

DOCKERFILE = DEPLOY / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, comments dropped and continuations joined."""
    text = re.sub(r"\\\n", " ", "\n".join(
        line for line in DOCKERFILE.read_text().splitlines()
        if not line.lstrip().startswith("#")))
    return [(word.upper(), rest.strip()) for word, _, rest in
            (line.strip().partition(" ") for line in text.splitlines() if line.strip())]


def _all(name: str) -> list[str]:
    return [args for word, args in _instructions() if word == name]


def test_it_builds_on_debians_python_image_with_debian_packages_only() -> None:
    (base_image,) = _all("FROM")
    runs = " ".join(_all("RUN"))

    assert re.fullmatch(r"python:3\.1[1-9]-slim-bookworm", base_image)
    assert "apt-get install -y --no-install-recommends" in runs
    # Nothing fetched from anywhere but Debian's and PyPI's package indexes.
    assert not re.search(r"\b(curl|wget)\b|--index-url|--extra-index-url", runs)
    assert not [args for args in _all("ADD") if "://" in args]


def test_the_project_is_pip_installed_from_the_build_context() -> None:
    steps = _instructions()
    install = steps.index(("RUN", "pip install . && rm -rf /src"))
    copied = {args.split()[0] for word, args in steps[:install] if word == "COPY"}
    packages = tomllib.loads((REPO / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["packages"]["find"]["include"]

    assert {"pyproject.toml", "gazette_core", "gazctl", "spark_jobs"} <= copied
    assert {p.rstrip("*") for p in packages} <= copied
    for args in _all("COPY"):
        for source in args.split()[:-1]:
            assert (REPO / source).exists(), source


def test_gazette_is_the_entrypoint_on_port_8080_as_a_user_other_than_root() -> None:
    (entrypoint,) = _all("ENTRYPOINT")
    (user,) = _all("USER")

    assert json.loads(entrypoint)[-1] == "gazette"
    assert _all("EXPOSE") == ["8080"]
    assert user.split(":")[0] not in {"0", "root"}
    env = " ".join(_all("ENV"))
    assert "HOME=/home/gazette" in env and "PYTHONPATH=/opt/gazette" in env
    assert "COPY examples /opt/gazette/examples" in [f"COPY {a}" for a in _all("COPY")]


def test_the_manifests_run_the_image_this_file_builds() -> None:
    named = re.search(r"docker build -f deploy/Dockerfile -t (\S+) \.", DOCKERFILE.read_text())
    images = {c["image"] for name in ("broker", "consumer") for o in base(name)
              if o["kind"] == "Deployment"
              for c in o["spec"]["template"]["spec"]["containers"]}

    assert named is not None and images == {named.group(1)}


def test_local_state_stays_out_of_the_build_context() -> None:
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()

    assert {".git", ".venv", ".cache"} <= set(ignored)
