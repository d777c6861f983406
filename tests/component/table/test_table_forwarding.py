"""The one forwarder of owned-table calls (issue 25 item 1; ``electric_table.host.forwarding``)
over two real gRPC servers, each with the platform's context interceptor in front as in a
service: a routed call that reaches the instance not owning its table is answered by the
owner (unary and stream, the owner's bytes relayed), the owner's refusal keeps its code,
message and rich detail, a table served here never leaves, and a forwarded call is never
forwarded again. The TableService methods are all routed, from the service descriptor."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from electric.common.v1 import errors_pb2
from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_platform.errors import FailedPrecondition
from electric_platform.rpc import wrap_handler
from electric_table.host.forwarding import OwnerForwarding
from electric_table.host.routing import FORWARDED_KEY, Router
from electric_table.tournament.routing import table_routes

OWNED_HERE, OWNED_THERE = "t-here", "t-there"


class _Directory:
    """A fixed assignment: ``mine`` are served here, the rest by ``owner``."""

    def __init__(self, mine: set[str], owner: str) -> None:
        self.mine, self.owner = mine, owner

    def serves(self, table_id: str) -> bool:
        return table_id in self.mine

    def owner_row(self, table_id: str) -> tuple[str | None, bool]:
        return self.owner, True

    def settled(self, table_id: str) -> bool:
        return False


def _router(mine: set[str], owner: str, me: str) -> Router:
    return Router(_Directory(mine, owner), lambda: me)


class _Tables(table_pb2_grpc.TableServiceServicer):
    """A table servicer that says who answered."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[tuple[str, str, bool]] = []

    def _seen(self, method: str, table_id: str, context: Any) -> None:
        forwarded = any(k == FORWARDED_KEY for k, _ in context.invocation_metadata() or ())
        self.calls.append((method, table_id, forwarded))

    async def GetTable(self, request: Any, context: Any) -> table_pb2.GetTableResponse:
        self._seen("GetTable", request.table_id, context)
        return table_pb2.GetTableResponse(table=table_pb2.TableView(table_name=self.name))

    async def Act(self, request: Any, context: Any) -> table_pb2.ActResponse:
        self._seen("Act", request.table_id, context)
        stale = errors_pb2.StaleCommand(requested_hand_number=3, current_hand_number=4)
        raise FailedPrecondition(f"stale at {self.name}", detail=stale)

    async def WatchTable(
        self, request: Any, context: Any
    ) -> AsyncIterator[table_pb2.WatchTableResponse]:
        self._seen("WatchTable", request.table_id, context)
        for seq in (1, 2, 3):
            yield table_pb2.WatchTableResponse(sequence=seq, event_type=self.name)


class _Errors(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """What the platform's outer interceptors do with a ServiceError: the call's status."""

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        @contextlib.asynccontextmanager
        async def around(context: Any) -> AsyncIterator[None]:
            yield

        return wrap_handler(await continuation(details), around)


async def _serve(servicer: _Tables, forwarding: OwnerForwarding | None) -> tuple[Any, str]:
    interceptors: list[Any] = [_Errors()] + ([forwarding] if forwarding else [])
    server = grpc.aio.server(interceptors=interceptors)
    table_pb2_grpc.add_TableServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Any, _Tables, _Tables, Router]]:
    owner_tables = _Tables("owner")
    owner_server, owner_at = await _serve(owner_tables, None)
    here_tables = _Tables("here")
    router = _router({OWNED_HERE}, owner_at, "127.0.0.1:1")
    here_server, here_at = await _serve(here_tables, OwnerForwarding(table_routes(router)))
    channel = grpc.aio.insecure_channel(here_at)
    try:
        yield table_pb2_grpc.TableServiceStub(channel), here_tables, owner_tables, router
    finally:
        await channel.close()
        await router.close()
        await here_server.stop(None)
        await owner_server.stop(None)


async def test_every_table_service_method_is_routed_by_its_table() -> None:
    service = table_pb2.DESCRIPTOR.services_by_name["TableService"]
    routes = table_routes(_router(set(), "x", "y"))
    assert sorted(routes) == sorted(f"/{service.full_name}/{m.name}" for m in service.methods)
    assert [m for m, r in routes.items() if r.wait] == [f"/{service.full_name}/WatchTable"]


async def test_a_call_for_a_table_owned_elsewhere_is_answered_by_its_owner(pair: Any) -> None:
    stub, here, owner, router = pair
    got = await stub.GetTable(table_pb2.GetTableRequest(table_id=OWNED_THERE))
    assert got.table.table_name == "owner"
    assert owner.calls == [("GetTable", OWNED_THERE, True)] and here.calls == []
    items = [m async for m in stub.WatchTable(table_pb2.WatchTableRequest(table_id=OWNED_THERE))]
    assert [(m.sequence, m.event_type) for m in items] == [(1, "owner"), (2, "owner"), (3, "owner")]
    assert router.forwarded == 2


async def test_a_table_owned_here_is_served_here(pair: Any) -> None:
    stub, here, owner, router = pair
    assert here.calls == []
    got = await stub.GetTable(table_pb2.GetTableRequest(table_id=OWNED_HERE))
    items = [m async for m in stub.WatchTable(table_pb2.WatchTableRequest(table_id=OWNED_HERE))]
    assert got.table.table_name == "here" and {m.event_type for m in items} == {"here"}
    assert [c[:2] for c in here.calls] == [("GetTable", OWNED_HERE), ("WatchTable", OWNED_HERE)]
    assert owner.calls == [] and router.forwarded == 0


async def test_the_owners_refusal_reaches_the_caller_with_its_detail(pair: Any) -> None:
    stub, _, owner, _ = pair
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Act(table_pb2.ActRequest(table_id=OWNED_THERE))
    assert caught.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert caught.value.details() == "stale at owner"
    trailers = dict(caught.value.trailing_metadata() or ())
    assert "grpc-status-details-bin" in trailers
    assert owner.calls == [("Act", OWNED_THERE, True)]


async def test_a_forwarded_call_for_a_table_not_owned_is_not_forwarded_again(pair: Any) -> None:
    stub, here, owner, router = pair
    md = ((FORWARDED_KEY, "127.0.0.9:5"),)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetTable(table_pb2.GetTableRequest(table_id=OWNED_THERE), metadata=md)
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
    assert owner.calls == [] and here.calls == [] and router.forwarded == 0
