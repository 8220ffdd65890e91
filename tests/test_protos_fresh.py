"""The committed *_pb2*.py(i) modules are exactly what `make protos` generates today."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gazette_core.protogen import (
    PROTOS,
    REPO_ROOT,
    generate,
    generated_files,
    protoc_command,
    stale_files,
)


def test_committed_protos_are_fresh(tmp_path: Path) -> None:
    generate(tmp_path)
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(generated_files())
    for rel in generated_files():
        committed = REPO_ROOT / rel
        assert committed.is_file(), f"{rel} is stale: run `make protos`"
        assert committed.read_bytes() == (tmp_path / rel).read_bytes(), (
            f"{rel} is stale: run `make protos`"
        )


def test_makefile_generates_through_the_shared_module() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^protos:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None, "Makefile has no protos target"
    assert recipe.group(1) == "\t$(PY) -m gazette_core.protogen\n"
    assert "grpc_tools" not in makefile


def test_protoc_command_lists_every_proto_and_plugin(tmp_path: Path) -> None:
    cmd = protoc_command(tmp_path)
    assert cmd[1:4] == ["-m", "grpc_tools.protoc", "-I."]
    assert cmd[4:8] == [
        f"--python_out={tmp_path}",
        f"--grpc_python_out={tmp_path}",
        f"--mypy_out={tmp_path}",
        f"--mypy_grpc_out={tmp_path}",
    ]
    assert tuple(cmd[8:]) == PROTOS


@pytest.fixture
def checkout_copy(tmp_path: Path) -> Path:
    """The .proto files and committed generated modules, copied into a scratch root."""
    for rel in [*PROTOS, *generated_files()]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO_ROOT / rel, tmp_path / rel)
    return tmp_path


def test_stale_files_names_an_edited_module(checkout_copy: Path) -> None:
    assert stale_files(checkout_copy) == []
    target = checkout_copy / "gazette_core/broker/protocol/protocol_pb2.pyi"
    target.write_bytes(target.read_bytes() + b"\n")
    assert stale_files(checkout_copy) == [
        "gazette_core/broker/protocol/protocol_pb2.pyi is stale: run `make protos`"
    ]


def test_stale_files_names_modules_of_an_edited_proto(checkout_copy: Path) -> None:
    proto = checkout_copy / "gazette_core/consumer/recoverylog/recorded_op.proto"
    proto.write_text(
        proto.read_text(encoding="utf-8") + "\nmessage Extra {\n  int64 x = 1;\n}\n",
        encoding="utf-8",
    )
    # Each module embeds only its own file's descriptor, so only these two change.
    assert stale_files(checkout_copy) == [
        "gazette_core/consumer/recoverylog/recorded_op_pb2.py is stale: run `make protos`",
        "gazette_core/consumer/recoverylog/recorded_op_pb2.pyi is stale: run `make protos`",
    ]


def test_stale_files_names_a_missing_module(checkout_copy: Path) -> None:
    (checkout_copy / "gazette_core/consumer/protocol/consumer_pb2_grpc.py").unlink()
    assert stale_files(checkout_copy) == [
        "gazette_core/consumer/protocol/consumer_pb2_grpc.py is stale: run `make protos`"
    ]
