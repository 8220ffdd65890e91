#!/usr/bin/env python3
"""Drive our broker with a client generated from gazette/core's own protocol.proto.

This is a developer check, not part of CI. It shows that a client built from the upstream
definition (not from our copy of it) can apply, list, append to, read and list the
fragments of a journal on our broker, and that every answer it receives, re-encoded and
decoded with our types, passes our response validators.

Usage::

    python -m gazette_core.testing.upstream_client --proto PATH/TO/upstream/protocol.proto \\
        [--broker.address http://127.0.0.1:8080]

``--broker.address`` defaults to ``$BROKER_ADDRESS`` or ``http://localhost:8080``. A local
stack is the easiest target::

    gazctl local up --dir /tmp/stack
    gazctl local status --dir /tmp/stack -o json     # the broker row holds its endpoint
    python -m gazette_core.testing.upstream_client --proto /tmp/upstream/protocol.proto \\
        --broker.address http://127.0.0.1:PORT
    gazctl local down --dir /tmp/stack

How it works:

1. The upstream file is copied into a temporary directory as ``upstream_protocol.proto``
   with its Go-only gogoproto options removed (the gogoproto import, ``option
   (gogoproto.x) = ...;`` statements and ``(gogoproto.x) = ...`` field options; none of them
   changes the wire format) and its ``ptypes/duration/duration.proto`` import pointed at
   ``google/protobuf/duration.proto``. grpc_tools.protoc generates
   ``upstream_protocol_pb2`` and ``upstream_protocol_pb2_grpc`` from it.
2. The generated module declares the same ``protocol.*`` message names as ours, and a
   protobuf descriptor pool refuses two definitions of one name, so the upstream client
   runs in a child interpreter (this script with ``--client``) that never imports our
   protocol modules. It applies a new uniquely named journal (fragment length 1024,
   ``file:///`` store, SNAPPY, refresh 1s, replication 1), lists it until it has a primary
   (as a unary call when the upstream List RPC is unary), appends a few chunks, reads from
   offset 0 without blocking up to the write head, lists the journal's fragments and
   finally deletes the journal. Each response is re-encoded and written to stdout.
3. This process decodes every response with our types, runs it through
   ``gazette_core.broker.protocol.validate_ext`` and checks its content, printing one line
   per RPC and ``OK`` at the end. Any failure makes the exit status non-zero.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

# The child process runs this file as a script, so it puts the repo root on sys.path.
REPO_ROOT = Path(__file__).resolve().parents[2]
MODULE = "upstream_protocol"  # generated as upstream_protocol_pb2 and upstream_protocol_pb2_grpc
DURATION_IMPORTS = {"ptypes/duration/duration.proto": "google/protobuf/duration.proto"}
FRAGMENT_LENGTH = 1024
STORE = "file:///"
# Three appends of 700 bytes: the second one takes the spool past FRAGMENT_LENGTH, so the
# third starts a new fragment and the read and the listing span more than one fragment.
CHUNKS = [bytes([ord("a") + i]) * 699 + b"\n" for i in range(3)]
RPC_TIMEOUT = 10.0
ASSIGN_TIMEOUT = 30.0


# --- preparing the upstream definition --------------------------------------


def _string_end(text: str, start: int) -> int:
    """Index just past the quoted string starting at `start`."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    raise ValueError(f"unterminated string at offset {start}")


def _skip_code(text: str, start: int, stop: str) -> int:
    """Index just past the first `stop` character at or after `start` outside strings."""
    i = start
    while i < len(text):
        if text[i] in "\"'":
            i = _string_end(text, i)
            continue
        if text[i] == stop:
            return i + 1
        i += 1
    raise ValueError(f"missing {stop!r} after offset {start}")


def _split_options(body: str) -> list[str]:
    """Split a field-option list on the commas outside strings and parentheses."""
    parts, depth, begin, i = [], 0, 0, 0
    while i < len(body):
        ch = body[i]
        if ch in "\"'":
            i = _string_end(body, i)
            continue
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[begin:i])
            begin = i + 1
        i += 1
    parts.append(body[begin:])
    return [p.strip() for p in parts if p.strip()]


def _is_gogo(option: str) -> bool:
    return option.replace(" ", "").startswith("(gogoproto.")


def strip_gogoproto(text: str) -> str:
    """`text` without gogoproto imports, options and field options; comments are kept."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            out.append(text[i:end])
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = len(text) if end < 0 else end + 2
            out.append(text[i:end])
            i = end
        elif text[i] in "\"'":
            end = _string_end(text, i)
            out.append(text[i:end])
            i = end
        elif _is_gogo_statement(text, i):
            _drop_indent(out)
            i = _skip_code(text, i, ";")
            # A statement that had its line to itself takes the line with it.
            if not out or out[-1].endswith("\n"):
                rest = len(text) - len(text[i:].lstrip(" \t"))
                if text.startswith("\n", rest):
                    i = rest + 1
        elif text[i] == "[":
            end = _skip_code(text, i, "]")
            kept = [o for o in _split_options(text[i + 1 : end - 1]) if not _is_gogo(o)]
            if kept:
                out.append("[" + ", ".join(kept) + "]")
            else:
                _drop_indent(out)
            i = end
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _drop_indent(out: list[str]) -> None:
    """Remove the spaces and tabs at the end of the text written so far."""
    while out and out[-1] in (" ", "\t"):
        out.pop()


def _is_gogo_statement(text: str, i: int) -> bool:
    """Whether a gogoproto import or `option (gogoproto.x) = ...;` statement starts at `i`."""
    if _word_at(text, i, "import"):
        return '"gogoproto/' in text[i : _skip_code(text, i, ";")]
    if _word_at(text, i, "option"):
        return _is_gogo(text[i + len("option") : _skip_code(text, i, "=")])
    return False


def _word_at(text: str, i: int, word: str) -> bool:
    before = text[i - 1] if i else " "
    after = text[i + len(word)] if i + len(word) < len(text) else " "
    return (
        text.startswith(word, i)
        and not (before.isalnum() or before == "_")
        and not (after.isalnum() or after == "_")
    )


def map_imports(text: str) -> str:
    """Point Go-module import paths at the protobuf well-known types."""
    for go_path, path in DURATION_IMPORTS.items():
        text = text.replace(f'import "{go_path}";', f'import "{path}";')
    return text


def prepare(proto: Path, work: Path) -> None:
    """Write the cleaned upstream file into `work` and generate its Python modules there."""
    from gazette_core.protogen import protoc_command, run_protoc

    source = proto.read_text(encoding="utf-8")
    (work / f"{MODULE}.proto").write_text(map_imports(strip_gogoproto(source)), encoding="utf-8")
    run_protoc(protoc_command(Path("."), [f"{MODULE}.proto"], stubs=False), cwd=work)


# --- the upstream client (child process) ------------------------------------


def run_client(work: Path, target: str, journal: str) -> int:
    """Drive the broker with the upstream-generated stub; one JSON line per RPC on stdout."""
    import grpc
    from google.protobuf.duration_pb2 import Duration

    sys.path.insert(0, str(work))
    up = importlib.import_module(f"{MODULE}_pb2")
    up_grpc = importlib.import_module(f"{MODULE}_pb2_grpc")
    list_method = up.DESCRIPTOR.services_by_name["Journal"].methods_by_name["List"]
    streaming_list = list_method.server_streaming
    rpc = "connect"

    def emit(responses: Sequence[Any], note: str = "") -> None:
        encoded = [base64.b64encode(r.SerializeToString()).decode() for r in responses]
        print(json.dumps({"rpc": rpc, "responses": encoded, "note": note}), flush=True)

    try:
        with grpc.insecure_channel(target) as channel:
            stub = up_grpc.JournalStub(channel)
            rpc = "Apply"
            spec = up.JournalSpec(
                name=journal,
                replication=1,
                fragment=up.JournalSpec.Fragment(
                    length=FRAGMENT_LENGTH,
                    compression_codec=up.SNAPPY,
                    stores=[STORE],
                    refresh_interval=Duration(seconds=1),
                ),
            )
            change = up.ApplyRequest.Change(expect_mod_revision=0, upsert=spec)
            emit([stub.Apply(up.ApplyRequest(changes=[change]), timeout=RPC_TIMEOUT)])

            rpc = "List"
            selector = up.LabelSelector(
                include=up.LabelSet(labels=[up.Label(name="name", value=journal)])
            )
            request = up.ListRequest(selector=selector)
            deadline = time.monotonic() + ASSIGN_TIMEOUT
            polls = 0
            while True:
                polls += 1
                if streaming_list:
                    listed = list(stub.List(request, timeout=RPC_TIMEOUT))
                else:
                    listed = [stub.List(request, timeout=RPC_TIMEOUT)]
                journals = [j for r in listed for j in r.journals]
                assigned = [j for j in journals if j.route.primary >= 0]
                if assigned or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            kind = "server-streaming" if streaming_list else "unary"
            emit(listed, f"{kind} List, {polls} poll(s) until assigned")
            mod_revision = journals[0].mod_revision if journals else -1

            for index, chunk in enumerate(CHUNKS, start=1):
                rpc = f"Append #{index}"
                requests = [
                    up.AppendRequest(journal=journal),
                    up.AppendRequest(content=chunk),
                    up.AppendRequest(),
                ]
                emit([stub.Append(iter(requests), timeout=RPC_TIMEOUT)])

            rpc = "Read"
            read = up.ReadRequest(journal=journal, offset=0, block=False)
            emit(list(stub.Read(read, timeout=RPC_TIMEOUT)))

            rpc = "ListFragments"
            emit([stub.ListFragments(up.FragmentsRequest(journal=journal), timeout=RPC_TIMEOUT)])

            rpc = "Apply (delete)"
            change = up.ApplyRequest.Change(expect_mod_revision=mod_revision, delete=journal)
            emit([stub.Apply(up.ApplyRequest(changes=[change]), timeout=RPC_TIMEOUT)])
    except grpc.RpcError as err:
        code = err.code() if isinstance(err, grpc.Call) else None
        details = err.details() if isinstance(err, grpc.Call) else str(err)
        print(json.dumps({"rpc": rpc, "error": f"gRPC {code}: {details}"}), flush=True)
        return 1
    return 0


# --- checking the responses with our types (parent process) ------------------


class CheckFailed(Exception):
    """A response did not have the expected content."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


class Checker:
    """Decodes the child's responses with our types, validates them and checks content."""

    def __init__(self, journal: str) -> None:
        from gazette_core.broker.protocol import protocol_pb2 as pb

        self.pb = pb
        self.journal = journal
        self.written = b""

    def check(self, rpc: str, encoded: list[str]) -> str:
        from google.protobuf.message import Message

        from gazette_core.broker.protocol import validate_ext as v

        pb = self.pb
        decoders: dict[str, tuple[type[Message], Callable[[Any], None]]] = {
            "Apply": (pb.ApplyResponse, v.validate_apply_response),
            "List": (pb.ListResponse, v.validate_list_response),
            "Append": (pb.AppendResponse, v.validate_append_response),
            "Read": (pb.ReadResponse, v.validate_read_response),
            "ListFragments": (pb.FragmentsResponse, v.validate_fragments_response),
        }
        kind = rpc.split(" ")[0]
        cls, validate = decoders[kind]
        messages: list[Any] = []
        for index, item in enumerate(encoded):
            msg = cls.FromString(base64.b64decode(item))
            try:
                validate(msg)
            except Exception as err:
                raise CheckFailed(f"response {index} fails validation: {err}") from err
            messages.append(msg)
        expect(bool(messages), "no response")
        method = {
            "Apply": self._apply,
            "List": self._list,
            "Append": self._append,
            "Read": self._read,
            "ListFragments": self._fragments,
        }[kind]
        return method(rpc, messages)

    def _status(self, msg: Any) -> str:
        return str(self.pb.Status.Name(msg.status))

    def _apply(self, rpc: str, messages: list[Any]) -> str:
        (msg,) = messages
        expect(msg.status == self.pb.OK, f"status {self._status(msg)}")
        verb = "deleted" if "delete" in rpc else "created"
        return f"{self.journal} {verb} at etcd revision {msg.header.etcd.revision}"

    def _list(self, rpc: str, messages: list[Any]) -> str:
        pb = self.pb
        expect(messages[0].status == pb.OK, f"status {self._status(messages[0])}")
        journals = [j for m in messages for j in m.journals]
        expect(len(journals) == 1, f"expected 1 journal, got {len(journals)}")
        (listed,) = journals
        spec, frag = listed.spec, listed.spec.fragment
        got = (
            spec.name,
            spec.replication,
            frag.length,
            frag.compression_codec,
            list(frag.stores),
            frag.refresh_interval.seconds,
            frag.refresh_interval.nanos,
        )
        want = (self.journal, 1, FRAGMENT_LENGTH, pb.SNAPPY, [STORE], 1, 0)
        expect(got == want, f"listed spec {got} != applied {want}")
        route = listed.route
        expect(route.primary >= 0, f"journal has no primary: {route}")
        expect(len(route.endpoints) == len(route.members), "route endpoints are missing")
        primary = route.members[route.primary]
        return (
            f"1 journal in {len(messages)} message(s), mod_revision {listed.mod_revision}, "
            f"primary {primary.zone}/{primary.suffix} at {route.endpoints[route.primary]}"
        )

    def _append(self, rpc: str, messages: list[Any]) -> str:
        from gazette_core.broker.protocol.fragment_ext import sum_to_digest

        (msg,) = messages
        chunk = CHUNKS[int(rpc.split("#")[1]) - 1]
        expect(msg.status == self.pb.OK, f"status {self._status(msg)}")
        commit = msg.commit
        begin, end = len(self.written), len(self.written) + len(chunk)
        expect(commit.journal == self.journal, f"commit journal {commit.journal!r}")
        expect(
            (commit.begin, commit.end) == (begin, end),
            f"commit [{commit.begin}, {commit.end}) != expected [{begin}, {end})",
        )
        expect(sum_to_digest(commit.sum) == hashlib.sha1(chunk).digest(), "commit sum mismatch")
        self.written += chunk
        return f"committed [{begin}, {end}) with the SHA1 of the {len(chunk)} appended bytes"

    def _read(self, rpc: str, messages: list[Any]) -> str:
        pb = self.pb
        expect(messages[0].HasField("header"), "first response has no header")
        content = b"".join(m.content for m in messages)
        expect(
            content == self.written, f"read {len(content)} bytes != {len(self.written)} appended"
        )
        metadata = [m for m in messages if not m.content]
        last = metadata[-1]
        expect(
            last.status == pb.OFFSET_NOT_YET_AVAILABLE and last.write_head == len(self.written),
            f"read ended with {self._status(last)} at write head {last.write_head}",
        )
        fragments = sorted(
            {(m.fragment.begin, m.fragment.end) for m in metadata if m.HasField("fragment")}
        )
        return (
            f"{len(messages)} responses, {len(content)} bytes equal to the appended content, "
            f"fragments {fragments}, ended {self._status(last)} at write head {last.write_head}"
        )

    def _fragments(self, rpc: str, messages: list[Any]) -> str:
        pb = self.pb
        (msg,) = messages
        expect(msg.status == pb.OK, f"status {self._status(msg)}")
        specs = sorted((f.spec for f in msg.fragments), key=lambda s: (s.begin, s.end))
        covered = 0
        for spec in specs:
            expect(spec.journal == self.journal, f"fragment of {spec.journal!r}")
            expect(spec.compression_codec == pb.SNAPPY, f"fragment codec {spec.compression_codec}")
            expect(spec.begin <= covered, f"gap before fragment [{spec.begin}, {spec.end})")
            covered = max(covered, spec.end)
        expect(
            covered == len(self.written),
            f"fragments cover [0, {covered}) not [0, {len(self.written)})",
        )
        shown = ", ".join(
            f"[{s.begin}, {s.end}) "
            + (f"persisted to {s.backing_store}" if s.backing_store else "local")
            for s in specs
        )
        return f"{len(specs)} fragment(s): {shown}"


def _child_lines(cmd: list[str]) -> Iterator[dict[str, Any]]:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    for line in done.stdout.splitlines():
        yield json.loads(line)
    if done.returncode != 0 and not done.stdout.strip():
        yield {"rpc": "client", "error": f"exit {done.returncode}: {done.stderr.strip()}"}


def run_check(proto: Path, address: str) -> int:
    from gazette_core.broker.client.channel import grpc_target

    target = grpc_target(address)
    journal = f"checks/upstream-client/{uuid.uuid4().hex[:12]}"
    work = Path(tempfile.mkdtemp(prefix="upstream-client-"))
    failures = 0
    try:
        prepare(proto, work)
        print(f"generated {MODULE}_pb2 from {proto} into {work}")
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--client",
            "--work",
            str(work),
            "--target",
            target,
            "--journal",
            journal,
        ]
        checker = Checker(journal)
        for line in _child_lines(cmd):
            rpc = line["rpc"]
            if "error" in line:
                print(f"{rpc:<15} FAIL {line['error']}")
                failures += 1
                continue
            try:
                summary = checker.check(rpc, line["responses"])
            except CheckFailed as err:
                print(f"{rpc:<15} FAIL {err}")
                failures += 1
                continue
            note = f" ({line['note']})" if line.get("note") else ""
            print(f"{rpc:<15} ok   {summary}{note}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"FAILED ({failures} failure(s))")
        return 1
    print("OK")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proto", type=Path, help="upstream broker/protocol/protocol.proto")
    parser.add_argument(
        "--broker.address",
        dest="address",
        default=os.environ.get("BROKER_ADDRESS") or "http://localhost:8080",
        help="broker endpoint URL (default $BROKER_ADDRESS or http://localhost:8080)",
    )
    # Internal: the child process running the upstream client.
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--journal", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client:
        return run_client(args.work, args.target, args.journal)
    if args.proto is None:
        parser.error("--proto is required")
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    return run_check(args.proto, args.address)


if __name__ == "__main__":
    sys.exit(main())
