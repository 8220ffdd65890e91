"""Generation of the Python protocol modules from the repository's .proto files.

``make protos`` runs ``python -m gazette_core.protogen`` and the freshness test calls
:func:`stale_files`; both build their protoc invocation with :func:`protoc_command`, so the
committed ``*_pb2*.py(i)`` files and the check can never disagree about how they are made.

Usage::

    python -m gazette_core.protogen            # regenerate in place
    python -m gazette_core.protogen --check    # exit 1, naming stale files, if any
    python -m gazette_core.protogen --out DIR  # write the generated tree under DIR
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Relative to the repository root, which is also the protoc include root: the paths are
# recorded in the generated descriptors, so they must stay relative.
PROTOS: tuple[str, ...] = (
    "gazette_core/broker/protocol/protocol.proto",
    "gazette_core/consumer/recoverylog/recorded_op.proto",
    "gazette_core/consumer/protocol/consumer.proto",
)

_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


def protoc_command(
    out_dir: Path,
    protos: Sequence[str] = PROTOS,
    include: Sequence[str] = (".",),
    *,
    stubs: bool = True,
) -> list[str]:
    """The protoc invocation writing Python (and, with `stubs`, mypy) modules under `out_dir`.

    Run it from the include root with :func:`run_protoc`, which puts the interpreter's
    script directory (holding the mypy-protobuf plugins) first on PATH.
    """
    out = str(out_dir)
    cmd = [sys.executable, "-m", "grpc_tools.protoc", *(f"-I{i}" for i in include)]
    cmd += [f"--python_out={out}", f"--grpc_python_out={out}"]
    if stubs:
        cmd += [f"--mypy_out={out}", f"--mypy_grpc_out={out}"]
    return [*cmd, *protos]


def run_protoc(cmd: Sequence[str], cwd: Path) -> None:
    """Run a :func:`protoc_command`; raise RuntimeError carrying protoc's output on failure."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"protoc failed ({done.returncode}): {done.stderr or done.stdout}")


def generated_files(protos: Sequence[str] = PROTOS) -> list[str]:
    """Relative paths of every file the generation writes."""
    return [p.removesuffix(".proto") + suffix for p in protos for suffix in _SUFFIXES]


def generate(out_dir: Path, root: Path = REPO_ROOT) -> None:
    """Generate the protocol modules of the .proto files under `root` into `out_dir`."""
    run_protoc(protoc_command(out_dir.resolve()), cwd=root)


def stale_files(root: Path = REPO_ROOT) -> list[str]:
    """One message per committed generated file that differs from a fresh generation."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="protogen-") as tmp:
        generate(Path(tmp), root)
        for rel in generated_files():
            committed = root / rel
            if not committed.is_file() or committed.read_bytes() != (Path(tmp) / rel).read_bytes():
                problems.append(f"{rel} is stale: run `make protos`")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gazette_core.protogen", description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO_ROOT, help="output root directory")
    parser.add_argument("--check", action="store_true", help="report stale files, write nothing")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale_files()
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    generate(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
