"""What a scenario records while it runs: every answer and view a player got, in order.

Shared by the tournament and casino scenarios (``tournament.py``, ``casino.py``), inside a
worker process. A call goes to the service's own gRPC servicer object (the same methods the
server serves, proto in and proto out) with the caller bound as the request's principal, as
the auth interceptor does; a refusal is recorded as the status and message the platform's
edge answers for it (`service_error_for`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from electric_platform.auth import Principal, Role, set_principal
from electric_platform.errors import service_error_for
from google.protobuf import json_format
from google.protobuf.message import Message

_M = TypeVar("_M", bound=Message)


def as_json(message: Message) -> dict[str, Any]:
    """A message as protobuf JSON (proto field names, defaults left out)."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def bind(subject: str, role: Role = Role.PLAYER) -> None:
    """The current context's caller (what the auth interceptor binds per call)."""
    set_principal(Principal(subject=subject, role=role))


def context_of(subject: str, role: Role = Role.PLAYER) -> contextvars.Context:
    """A context whose caller is ``subject`` (for a task that streams, e.g. a watcher)."""
    ctx = contextvars.copy_context()
    ctx.run(bind, subject, role)
    return ctx


@dataclass
class Recorder:
    """The player views of one scenario, in the order they were given."""

    views: list[dict[str, Any]] = field(default_factory=list)
    step: int = 0

    def add(self, who: str, what: str, body: dict[str, Any]) -> None:
        self.views.append({"step": self.step, "who": who, "what": what, **body})

    async def call(
        self,
        who: str,
        what: str,
        rpc: Callable[[Any, Any], Awaitable[_M]],
        request: Message,
        *,
        role: Role = Role.PLAYER,
    ) -> _M | None:
        """The servicer method ``rpc`` called with ``request`` as ``who`` (no gRPC context:
        the servicers read the caller from the bound principal); its answer, or its refusal,
        recorded; the answer."""
        bind(who, role)
        try:
            answer = await rpc(request, None)
        except Exception as exc:  # every refusal is a result to compare, not a crash
            # What the platform's edge answers for it (the interceptor's mapping): a tree
            # whose handlers raise typed errors and one whose API raised statuses compare
            # by what the caller gets.
            answer_error = service_error_for(exc)
            if answer_error.code.name in ("INTERNAL", "UNKNOWN"):
                raise
            self.add(who, what, {"error": answer_error.code.name, "message": answer_error.message})
            return None
        finally:
            bind("", role)
        self.add(who, what, {"answer": as_json(answer)})
        return answer
