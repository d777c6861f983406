"""The browser edge's limits and origins, checked through the edge in front of the four real
services in this process (the rest of its guarantees: test_web_edge_security.py):

* calls past a caller's burst (a caller: remote address and token subject) are
  RESOURCE_EXHAUSTED for that caller only; an address's own limit, in front, stops one
  address rotating token subjects; a forged subject from elsewhere spends only the forger's
  budget; a caller's open streams are bounded (a closed stream gives its slot back);
* origins: a foreign origin is refused (POST ``permission_denied``, preflight 403 without
  CORS headers), an allowed origin's preflight gets them, same-origin calls work.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import time
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest
import requests
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from electric.registration.v1 import registration_pb2
from electric_platform import SigningKey

from tests.support.platform_kit import embedded_platform
from tests.support.web_answers import raw_post
from tests.support.web_edge import Edge, browser_edge, rpc_named

pytestmark = pytest.mark.timeout(240)

PROTOCOLS = (ProtocolType.CONNECT, ProtocolType.GRPC_WEB)
NO_TABLE = "00000000-0000-4000-8000-000000000000"
ALLOWED = "https://play.electric.test"
FOREIGN = "https://evil.test"


# ------------------------------------------------------------------------------ rates


#: Per caller (remote address and token subject): three calls, then one per 1,000 s. Per
#: remote address, in front: twelve calls, then one per 1,000 s.
RATE_ARGS = ["-rate", "0.001", "-burst", "3", "-address-rate", "0.001", "-address-burst", "12"]


async def test_a_caller_past_its_burst_is_slowed_and_others_are_not(tmp_path: Path) -> None:
    async with (
        embedded_platform(tmp_path) as platform,
        browser_edge(platform.targets, extra_args=RATE_ARGS) as edge,
    ):
        alice = platform.token("alice", "player")
        request = registration_pb2.ListLobbyRequest()
        path = rpc_named("RegistrationService/ListLobby").path
        spent = 0  # calls from this address so far (every one passes the address limit first)
        for _ in range(3):
            await edge.unary("RegistrationService/ListLobby", request, token=alice)
            spent += 1
        for protocol in PROTOCOLS:
            with pytest.raises(ConnectError) as slowed:
                await edge.unary(
                    "RegistrationService/ListLobby", request, token=alice, protocol=protocol
                )
            spent += 1
            assert slowed.value.code is Code.RESOURCE_EXHAUSTED, edge.log_tail()
        # A new token of the same player, from the same address, is the same caller.
        with pytest.raises(ConnectError) as still:
            await edge.unary(
                "RegistrationService/ListLobby", request, token=platform.token("alice", "player")
            )
        spent += 1
        assert still.value.code is Code.RESOURCE_EXHAUSTED
        # Another player (from the same address, below its limit) is unaffected.
        bob = platform.token("bob", "player")
        for _ in range(3):
            lobby = await edge.unary("RegistrationService/ListLobby", request, token=bob)
            spent += 1
            assert lobby.tiers
        assert spent < 12
        # A caller rotating token subjects (each a valid token, each call on a new
        # connection, claiming another address in X-Forwarded-For) gets a fresh per-subject
        # burst every time, but the address's limit stops it: within the address's burst of
        # 12, whether or not the refused calls above counted against it.
        answers = []
        for i in range(13):
            answer = await asyncio.to_thread(
                raw_post,
                edge.url,
                path,
                b"",
                token=platform.token(f"mallory-{i}", "player"),
                protocol=("connect", "grpc-web")[i % 2],
                headers={"X-Forwarded-For": f"203.0.113.{i + 1}", "X-Real-Ip": f"198.51.100.{i}"},
            )
            answers.append(answer.code)
        assert set(answers) <= {"ok", "resource_exhausted"}, answers
        assert answers[0] == "ok" and answers[-1] == "resource_exhausted", (
            answers,
            edge.log_tail(),
        )
        passed = answers.count("ok")
        assert passed <= 12 - 6, (answers, spent)  # alice's 3 and bob's 3 succeeded
        first_refused = answers.index("resource_exhausted")
        assert set(answers[first_refused:]) == {"resource_exhausted"}, answers
        # Once the address is spent, every caller from it waits, a known player too.
        with pytest.raises(ConnectError) as spent_address:
            await edge.unary("RegistrationService/ListLobby", request, token=bob)
        assert spent_address.value.code is Code.RESOURCE_EXHAUSTED


def _connect_code_from(source: str, url: str, path: str, token: str) -> str:
    """The Connect code of an empty unary call sent from the local address ``source``."""
    parsed = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(
        parsed.hostname or "", parsed.port, timeout=15, source_address=(source, 0)
    )
    try:
        conn.request(
            "POST",
            path,
            body=b"",
            headers={
                "Content-Type": "application/proto",
                "Connect-Protocol-Version": "1",
                "Authorization": f"Bearer {token}",
            },
        )
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    if response.status == 200:
        return "ok"
    return str(json.loads(body).get("code", f"http {response.status}"))


async def test_a_forged_subject_does_not_drain_the_players_bucket(tmp_path: Path) -> None:
    """A token with alice's subject that no service accepts (signed by a stranger's key
    under the issuer's kid), sent from another address, spends only its own (address,
    subject) bucket: alice, calling from her address, is unaffected."""
    args = ["-rate", "0.001", "-burst", "3", "-address-rate", "0.001", "-address-burst", "100"]
    async with (
        embedded_platform(tmp_path) as platform,
        browser_edge(platform.targets, extra_args=args) as edge,
    ):
        now = int(time.time())
        stranger = SigningKey.generate(platform.issuer_key.kid)
        claims = {"sub": "alice", "role": "player", "iat": now, "exp": now + 300,
                  "iss": "electric", "aud": "electric"}  # fmt: skip
        forged = jwt.encode(
            claims, stranger.private, algorithm="EdDSA", headers={"kid": stranger.kid}
        )
        path = rpc_named("RegistrationService/ListLobby").path
        codes = [
            await asyncio.to_thread(_connect_code_from, "127.0.0.2", edge.url, path, forged)
            for _ in range(5)
        ]
        # The service refuses the forgery; past its burst the edge refuses it first.
        assert codes == ["unauthenticated"] * 3 + ["resource_exhausted"] * 2, (
            codes,
            edge.log_tail(),
        )
        refused_from = [
            line["remote"]
            for line in _log_lines(edge)
            if line.get("msg") == "refused" and line.get("reason") == "rate"
        ]
        assert refused_from and all(r.startswith("127.0.0.2:") for r in refused_from), refused_from
        alice = platform.token("alice", "player")
        for _ in range(3):
            lobby = await edge.unary(
                "RegistrationService/ListLobby", registration_pb2.ListLobbyRequest(), token=alice
            )
            assert lobby.tiers
        with pytest.raises(ConnectError) as slowed:  # and her own burst is hers: 3
            await edge.unary(
                "RegistrationService/ListLobby", registration_pb2.ListLobbyRequest(), token=alice
            )
        assert slowed.value.code is Code.RESOURCE_EXHAUSTED


def _log_lines(edge: Edge) -> list[dict[str, Any]]:
    """The edge's JSON log lines so far."""
    assert edge.log_path is not None
    out = []
    for line in edge.log_path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


async def test_the_address_limit_defaults_to_four_times_the_callers(tmp_path: Path) -> None:
    """Without -address-rate/-address-burst, an address may make 4x -burst calls at once:
    eight fresh subjects' calls pass with -burst 2, the ninth is refused."""
    async with (
        embedded_platform(tmp_path) as platform,
        browser_edge(platform.targets, extra_args=["-rate", "0.001", "-burst", "2"]) as edge,
    ):
        codes = []
        for i in range(9):
            try:
                await edge.unary(
                    "RegistrationService/ListLobby",
                    registration_pb2.ListLobbyRequest(),
                    token=platform.token(f"rotating-{i}", "player"),
                )
                codes.append("ok")
            except ConnectError as err:
                codes.append(err.code.value)
        assert codes == ["ok"] * 8 + ["resource_exhausted"], (codes, edge.log_tail())


async def _opened(edge: Edge, token: str) -> AsyncIterator[Any]:
    """A WatchMyTables stream through the edge whose first message arrived."""
    stream = edge.stream(
        "RegistrationService/WatchMyTables",
        registration_pb2.WatchMyTablesRequest(),
        token=token,
        timeout_ms=60_000,
    )
    await asyncio.wait_for(anext(stream), 15)
    return stream


async def test_open_streams_per_caller_are_bounded(tmp_path: Path) -> None:
    async with (
        embedded_platform(tmp_path) as platform,
        browser_edge(platform.targets, extra_args=["-max-streams", "2"]) as edge,
    ):
        alice = platform.token("alice", "player")
        first = await _opened(edge, alice)
        second = await _opened(edge, alice)
        with pytest.raises(ConnectError) as refused:
            await _opened(edge, alice)
        assert refused.value.code is Code.RESOURCE_EXHAUSTED
        # Unary calls are not streams: alice may still call.
        lobby = await edge.unary(
            "RegistrationService/ListLobby", registration_pb2.ListLobbyRequest(), token=alice
        )
        assert lobby.tiers
        other = await _opened(edge, platform.token("bob", "player"))
        # Closing a stream gives its slot back (once the edge has seen it end).
        await first.aclose()  # type: ignore[attr-defined]
        deadline = time.monotonic() + 15
        third = None
        while third is None:
            try:
                third = await _opened(edge, alice)
            except ConnectError as err:
                assert err.code is Code.RESOURCE_EXHAUSTED
                assert time.monotonic() < deadline, "the closed stream's slot never came back"
                await asyncio.sleep(0.05)
        for stream in (second, other, third):
            await stream.aclose()  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ origins


def _http(method: str, url: str, headers: dict[str, str], data: bytes = b"") -> requests.Response:
    return requests.request(method, url, headers=headers, data=data, timeout=15)


async def test_origins_outside_the_list_are_refused(tmp_path: Path) -> None:
    async with (
        embedded_platform(tmp_path) as platform,
        browser_edge(platform.targets, origins=[ALLOWED]) as edge,
    ):
        token = platform.token("alice", "player")
        path = rpc_named("RegistrationService/ListLobby").path
        url = edge.url.rstrip("/") + path
        own = edge.url.rstrip("/")  # http://127.0.0.1:<port>
        # Browsers send the requested headers lower-case and sorted (the Fetch standard);
        # rs/cors, under the edge, matches that form.
        connect_headers = "authorization,connect-protocol-version,connect-timeout-ms,content-type"
        grpc_web_headers = "authorization,content-type,grpc-timeout,x-grpc-web,x-user-agent"
        asked = {
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": connect_headers,
        }
        # A foreign origin: preflight 403 without CORS headers, the call permission_denied.
        pre = await asyncio.to_thread(_http, "OPTIONS", url, {"Origin": FOREIGN, **asked})
        assert pre.status_code == 403
        assert not any(k.lower().startswith("access-control-") for k in pre.headers), pre.headers
        for way in ("connect", "grpc-web"):
            answer = await asyncio.to_thread(
                raw_post, edge.url, path, b"", token=token, protocol=way, origin=FOREIGN
            )
            assert answer.code == "permission_denied", (way, answer.status)
            assert "access-control-allow-origin" not in answer.headers
        with pytest.raises(ConnectError) as refused:
            await edge.unary(path.split(".v1.")[1], registration_pb2.ListLobbyRequest(),
                             token=token, origin=FOREIGN)  # fmt: skip
        assert refused.value.code is Code.PERMISSION_DENIED
        # The allowed origin: the preflight gets the CORS headers of the Connect protocol.
        for requested in (connect_headers, grpc_web_headers):
            pre = await asyncio.to_thread(
                _http,
                "OPTIONS",
                url,
                {**asked, "Origin": ALLOWED, "Access-Control-Request-Headers": requested},
            )
            assert pre.status_code in (200, 204), pre.status_code
            assert pre.headers.get("Access-Control-Allow-Origin") == ALLOWED, pre.headers
            allowed_headers = pre.headers.get("Access-Control-Allow-Headers", "").lower()
            for header in requested.split(","):
                assert header in allowed_headers, (header, allowed_headers)
            assert "POST" in pre.headers.get("Access-Control-Allow-Methods", "")
        for way in ("connect", "grpc-web"):
            answer = await asyncio.to_thread(
                raw_post, edge.url, path, b"", token=token, protocol=way, origin=ALLOWED
            )
            assert answer.code == "ok", (way, answer.status)
            assert answer.headers.get("access-control-allow-origin") == ALLOWED
            exposed = answer.headers.get("access-control-expose-headers", "").lower()
            assert "grpc-status-details-bin" in exposed, exposed
        # Same-origin (the page the edge serves) and non-browser callers (no Origin) work.
        for origin in (own, ""):
            answer = await asyncio.to_thread(
                raw_post, edge.url, path, b"", token=token, origin=origin
            )
            assert answer.code == "ok", (origin, answer.status)
        lobby = await edge.unary(
            "RegistrationService/ListLobby", registration_pb2.ListLobbyRequest(), token=token,
            origin=ALLOWED,
        )  # fmt: skip
        assert lobby.tiers
