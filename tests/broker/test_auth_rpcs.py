"""Every Journal RPC against a broker with auth keys: refused, hidden or served.

See docs/design/protocol.md#authorization.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aetcd
import grpc
import jwt
import pytest
import pytest_asyncio

from gazette_core.broker.protocol import protocol_pb2 as pb
from gazette_core.broker.protocol import protocol_pb2_grpc as pb_grpc
from gazette_core.broker.protocol.labels_ext import parse_selector
from gazette_core.broker.service import Broker
from gazette_core.server import auth
from gazette_core.testing.broker import broker_config, journal_spec, journal_stub, running_broker
from gazette_core.testing.etcd import EtcdServer
from tests.broker.auth_support import KEY, KEYS, bearer, upsert, wait_primary

JOURNAL = "auth/one"
Metadata = tuple[tuple[str, str], ...] | None


@pytest_asyncio.fixture(loop_scope="session")
async def secured(etcd: aetcd.Client, etcd_server: EtcdServer, tmp_path: Path
                  ) -> AsyncIterator[tuple[Broker, pb_grpc.JournalStub]]:
    """A broker with auth keys, serving JOURNAL (labelled app=clicks) with one append."""
    config = broker_config(etcd_server.endpoint, str(tmp_path), auth_keys=KEYS)
    async with running_broker(config) as broker, journal_stub(broker.endpoint) as stub:
        spec = journal_spec(JOURNAL, labels=(("app", "clicks"),))
        assert (await stub.Apply(upsert(spec), metadata=bearer())).status == pb.OK
        await wait_primary(stub, JOURNAL)
        assert (await _append(stub, bearer())).status == pb.OK
        yield broker, stub


async def _list(stub: pb_grpc.JournalStub, md: Metadata) -> list[Any]:
    return [r async for r in stub.List(pb.ListRequest(), metadata=md)]


async def _apply(stub: pb_grpc.JournalStub, md: Metadata) -> Any:
    spec = journal_spec(JOURNAL, labels=(("app", "clicks"),))
    return await stub.Apply(upsert(spec, expect=-1), metadata=md)


async def _read(stub: pb_grpc.JournalStub, md: Metadata) -> list[Any]:
    return [r async for r in stub.Read(pb.ReadRequest(journal=JOURNAL), metadata=md)]


async def _append(stub: pb_grpc.JournalStub, md: Metadata) -> Any:
    msgs = [pb.AppendRequest(journal=JOURNAL), pb.AppendRequest(content=b"hello\n"),
            pb.AppendRequest()]
    return await stub.Append(iter(msgs), metadata=md)


async def _replicate(stub: pb_grpc.JournalStub, md: Metadata) -> list[Any]:
    listed = stub.List(pb.ListRequest(), metadata=bearer())
    etcd = (await anext(aiter(listed))).header.etcd
    listed.cancel()
    first = pb.ReplicateRequest(
        header=pb.Header(etcd=etcd, route=pb.Route(primary=-1)), acknowledge=True,
        proposal=pb.Fragment(journal=JOURNAL, compression_codec=pb.NONE),
        registers=pb.LabelSet())
    return [r async for r in stub.Replicate(iter([first]), metadata=md)]


async def _list_fragments(stub: pb_grpc.JournalStub, md: Metadata) -> Any:
    return await stub.ListFragments(pb.FragmentsRequest(journal=JOURNAL), metadata=md)


async def _store_health(stub: pb_grpc.JournalStub, md: Metadata) -> Any:
    return await stub.FragmentStoreHealth(
        pb.FragmentStoreHealthRequest(fragment_store="file:///"), metadata=md)


CALLS: dict[str, Callable[[pb_grpc.JournalStub, Metadata], Awaitable[Any]]] = {
    "List": _list, "Apply": _apply, "Read": _read, "Append": _append,
    "Replicate": _replicate, "ListFragments": _list_fragments,
    "FragmentStoreHealth": _store_health,
}
REQUIRED = {"List": "LIST", "Apply": "APPLY", "Read": "READ", "Append": "APPEND",
            "Replicate": "REPLICATE", "ListFragments": "READ", "FragmentStoreHealth": "READ"}


async def _refusal(call: Awaitable[Any]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value.code(), caught.value.details() or ""


@pytest.mark.parametrize("rpc", CALLS)
async def test_no_token_is_unauthenticated(secured: tuple[Broker, pb_grpc.JournalStub],
                                           rpc: str) -> None:
    assert await _refusal(CALLS[rpc](secured[1], None)) == (
        grpc.StatusCode.UNAUTHENTICATED, "missing or empty Authorization token")


@pytest.mark.parametrize("rpc", CALLS)
async def test_expired_token_is_unauthenticated(secured: tuple[Broker, pb_grpc.JournalStub],
                                                rpc: str) -> None:
    expired = bearer(now=time.time() - 2 * auth.HOUR_S)

    assert await _refusal(CALLS[rpc](secured[1], expired)) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "verifying Authorization: token has invalid claims: token is expired")


@pytest.mark.parametrize("rpc", CALLS)
async def test_token_without_iat_is_unauthenticated(secured: tuple[Broker, pb_grpc.JournalStub],
                                                    rpc: str) -> None:
    # Minted by PyJWT directly: every other claim is valid, only `iat` is missing.
    token = jwt.encode({"cap": auth.ALL, "exp": int(time.time()) + auth.HOUR_S}, KEY,
                       algorithm="HS256")

    assert await _refusal(CALLS[rpc](secured[1], (("authorization", f"Bearer {token}"),))) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "verifying Authorization: token has invalid claims: token is missing required claim: "
        "iat claim is required")


@pytest.mark.parametrize("rpc", CALLS)
async def test_token_without_the_capability_is_unauthenticated(
        secured: tuple[Broker, pb_grpc.JournalStub], rpc: str) -> None:
    required = getattr(auth, REQUIRED[rpc])
    lacking = bearer(auth.ALL & ~required)

    assert await _refusal(CALLS[rpc](secured[1], lacking)) == (
        grpc.StatusCode.UNAUTHENTICATED,
        f"authorization is missing required {REQUIRED[rpc]} capability")


def _not_found_header(broker: Broker) -> pb.Header:
    """The header of a JOURNAL_NOT_FOUND answer: this broker, and no route to leak."""
    return pb.Header(process_id=broker.process_id, route=pb.Route(primary=-1),
                     etcd=broker.keyspace.header)


async def test_journal_outside_the_selector_is_not_found(
        secured: tuple[Broker, pb_grpc.JournalStub]) -> None:
    broker, stub = secured
    elsewhere = bearer(selector=parse_selector("name=auth/other"))
    header = _not_found_header(broker)

    assert await _read(stub, elsewhere) == [
        pb.ReadResponse(status=pb.JOURNAL_NOT_FOUND, header=header)]
    assert await _append(stub, elsewhere) == pb.AppendResponse(
        status=pb.JOURNAL_NOT_FOUND, header=header)
    assert await _replicate(stub, elsewhere) == [
        pb.ReplicateResponse(status=pb.JOURNAL_NOT_FOUND, header=header)]
    assert await _list_fragments(stub, elsewhere) == pb.FragmentsResponse(
        status=pb.JOURNAL_NOT_FOUND, header=header)


async def test_list_filters_out_journals_outside_the_selector(
        secured: tuple[Broker, pb_grpc.JournalStub]) -> None:
    _, stub = secured
    other = journal_spec("auth/two", labels=(("app", "views"),))
    assert (await stub.Apply(upsert(other), metadata=bearer())).status == pb.OK

    for sel, names in [("app=clicks", [JOURNAL]), ("name=auth/two", ["auth/two"]),
                       ("app=none", []), ("", [JOURNAL, "auth/two"])]:
        resps = await _list(stub, bearer(auth.LIST, parse_selector(sel)))
        assert [j.spec.name for r in resps for j in r.journals] == names, sel

    watch = stub.List(pb.ListRequest(watch=True), metadata=bearer(
        auth.LIST, parse_selector("app=clicks")))
    snapshot = await anext(aiter(watch))
    watch.cancel()
    assert [j.spec.name for j in snapshot.journals] == [JOURNAL]


async def test_apply_outside_the_selector_is_unauthenticated(
        secured: tuple[Broker, pb_grpc.JournalStub]) -> None:
    _, stub = secured
    clicks = bearer(auth.APPLY, parse_selector("app=clicks"))
    relabelled = journal_spec(JOURNAL, labels=(("app", "views"),))

    # An upsert is checked against the new spec's labels and name ...
    assert (await _apply(stub, clicks)).status == pb.OK
    assert await _refusal(stub.Apply(upsert(relabelled), metadata=clicks)) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "not authorized to apply journal 'auth/one': it is outside the authorization's "
        "selector")
    # ... a delete against the name alone, which carries no app label.
    delete = pb.ApplyRequest(changes=[pb.ApplyRequest.Change(delete=JOURNAL,
                                                             expect_mod_revision=-1)])
    assert await _refusal(stub.Apply(delete, metadata=clicks)) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "not authorized to apply journal 'auth/one': it is outside the authorization's "
        "selector")
    by_name = bearer(auth.APPLY, parse_selector(f"name={JOURNAL}"))
    assert (await stub.Apply(delete, metadata=by_name)).status == pb.OK


async def test_store_health_is_not_journal_scoped(
        secured: tuple[Broker, pb_grpc.JournalStub]) -> None:
    resp = await _store_health(secured[1], bearer(auth.READ, parse_selector("name=x/y")))

    assert resp.status == pb.OK


async def test_a_token_with_just_the_capability_and_a_matching_selector_is_served(
        secured: tuple[Broker, pb_grpc.JournalStub]) -> None:
    _, stub = secured
    sel = parse_selector("app=clicks")

    assert [j.spec.name for r in await _list(stub, bearer(auth.LIST, sel))
            for j in r.journals] == [JOURNAL]
    assert (await _apply(stub, bearer(auth.APPLY, sel))).status == pb.OK
    assert (await _append(stub, bearer(auth.APPEND, sel))).commit.end == 12
    read = await _read(stub, bearer(auth.READ, sel))
    assert b"".join(r.content for r in read) == b"hello\nhello\n"
    frags = await _list_fragments(stub, bearer(auth.READ, sel))
    assert frags.status == pb.OK


async def test_expiry_ends_a_blocking_read(secured: tuple[Broker, pb_grpc.JournalStub]) -> None:
    # The token outlives its exp by the 5 s leeway at verification, but the RPC
    # is bounded by exp itself, as Go bounds its context.
    soon = bearer(auth.READ, lifetime_s=1)
    req = pb.ReadRequest(journal=JOURNAL, offset=6, block=True)

    async def read_all() -> list[pb.ReadResponse]:
        return [r async for r in secured[1].Read(req, metadata=soon)]

    async with asyncio.timeout(30):
        assert await _refusal(read_all()) == (grpc.StatusCode.DEADLINE_EXCEEDED,
                                              "authorization expired during the RPC")
