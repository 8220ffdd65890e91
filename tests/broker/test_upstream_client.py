"""gazette_core/testing/upstream_client.py: gogoproto stripping, and a full run against our broker.

The upstream protocol.proto is not part of the repository, so the end-to-end runs use a
variant of our own protocol.proto written the way upstream writes it: with the gogoproto
import, file and message options, field options, and the Go duration import path.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from gazette_core.broker.service import Broker
from gazette_core.protogen import REPO_ROOT
from gazette_core.testing.upstream_client import (
    MODULE,
    map_imports,
    prepare,
    run_check,
    strip_gogoproto,
)

GOGO_SAMPLE = """\
syntax = "proto3";
import "gogoproto/gogo.proto";
import "ptypes/duration/duration.proto";
option go_package = "example";
option (gogoproto.equal_all) = true;
option (gogoproto.goproto_getters_all)
    = false;
// A comment naming (gogoproto.nullable) and [begin, end) stays.
message M {
  string a = 1 [ (gogoproto.casttype) = "Journal" ];
  string b = 2 [
    (gogoproto.nullable) = false,
    (gogoproto.moretags) = "yaml:\\",omitempty;]\\""
  ];
  int32 c = 3 [deprecated = true, (gogoproto.moretags) = "x"];
  option (gogoproto.goproto_stringer) = false;
}
"""

GOGO_STRIPPED = """\
syntax = "proto3";
import "google/protobuf/duration.proto";
option go_package = "example";
// A comment naming (gogoproto.nullable) and [begin, end) stays.
message M {
  string a = 1;
  string b = 2;
  int32 c = 3 [deprecated = true];
}
"""


def test_strip_gogoproto_removes_only_go_options() -> None:
    assert map_imports(strip_gogoproto(GOGO_SAMPLE)) == GOGO_STRIPPED


def _upstream_style(proto: str, *, unary_list: bool) -> str:
    """Our protocol.proto with upstream's Go-only decorations (and optionally a unary List)."""
    text = proto.replace(
        'import "google/protobuf/duration.proto";',
        'import "gogoproto/gogo.proto";\nimport "ptypes/duration/duration.proto";\n\n'
        "option (gogoproto.marshaler_all) = true;\noption (gogoproto.equal_all) = true;",
    )
    text = text.replace(
        "  repeated Label labels = 1;",
        "  repeated Label labels = 1 [\n    (gogoproto.nullable) = false,\n"
        '    (gogoproto.moretags) = "yaml:\\",omitempty\\""\n  ];',
    )
    text = text.replace(
        "  LabelSet include = 1;", "  LabelSet include = 1 [ (gogoproto.nullable) = false ];"
    )
    text = text.replace(
        "  Header header = 2;\n  Fragment commit = 3;",
        "  Header header = 2 [ (gogoproto.nullable) = false ];\n  Fragment commit = 3;",
    )
    if unary_list:
        text = text.replace(
            "rpc List(ListRequest) returns (stream ListResponse);",
            "rpc List(ListRequest) returns (ListResponse);",
        )
    assert text.count("gogoproto") == 7
    return text


@pytest.fixture(params=[False, True], ids=["streaming-list", "unary-list"])
def upstream_proto(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    ours = (REPO_ROOT / "gazette_core/broker/protocol/protocol.proto").read_text(encoding="utf-8")
    path = tmp_path / "upstream" / "protocol.proto"
    path.parent.mkdir()
    path.write_text(_upstream_style(ours, unary_list=request.param), encoding="utf-8")
    return path


def test_prepare_generates_a_distinctly_named_client(upstream_proto: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    prepare(upstream_proto, work)
    assert sorted(p.name for p in work.iterdir()) == [
        f"{MODULE}.proto",
        f"{MODULE}_pb2.py",
        f"{MODULE}_pb2_grpc.py",
    ]
    cleaned = (work / f"{MODULE}.proto").read_text(encoding="utf-8")
    assert "gogoproto" not in cleaned
    assert 'import "google/protobuf/duration.proto";' in cleaned
    grpc_module = (work / f"{MODULE}_pb2_grpc.py").read_text(encoding="utf-8")
    assert f"import {MODULE}_pb2 as" in grpc_module


async def test_script_passes_against_our_broker(
    broker: Broker, upstream_proto: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await asyncio.to_thread(run_check, upstream_proto, broker.endpoint)
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert [re.split(r"\s{2,}", line)[0] for line in lines[1:]] == [
        "Apply",
        "List",
        "Append #1",
        "Append #2",
        "Append #3",
        "Read",
        "ListFragments",
        "Apply (delete)",
        "OK",
    ]
    assert all(" ok   " in line for line in lines[1:-1]), out
    kind = "unary" if "returns (ListResponse)" in upstream_proto.read_text() else "server-streaming"
    assert f"({kind} List, " in lines[2]
    assert "2100 bytes equal to the appended content" in lines[6]


async def test_script_reports_an_unreachable_broker(
    upstream_proto: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await asyncio.to_thread(run_check, upstream_proto, "http://127.0.0.1:1")
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert lines[1].startswith("Apply           FAIL gRPC StatusCode.UNAVAILABLE: ")
    assert lines[2:] == ["FAILED (1 failure(s))"]
