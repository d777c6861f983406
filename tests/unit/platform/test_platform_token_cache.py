"""The interceptor's memory of verified tokens (``auth.VerifiedTokens``): a token accepted
once is not verified again until it expires; refusals and expired tokens are never served
from memory; the memory is bounded."""

from __future__ import annotations

import time

import pytest
from electric_platform import DevKeys, Role, TokenPolicy, Unauthenticated, issue_token
from electric_platform import auth as auth_module
from electric_platform.auth import VerifiedTokens

KEYS = DevKeys.generate()
POLICY = TokenPolicy(KEYS.keyset)


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tokens really verified (signature checked)."""
    seen: list[str] = []
    real = auth_module.verify_token

    def counting(token: str, policy: TokenPolicy) -> auth_module.Principal:
        seen.append(token)
        return real(token, policy)

    monkeypatch.setattr(auth_module, "verify_token", counting)
    return seen


def test_a_token_is_verified_once_until_it_expires(checks: list[str]) -> None:
    clock = Clock()
    cache = VerifiedTokens(POLICY, clock=clock)
    token = issue_token("alice", Role.PLAYER, KEYS.issuer, ttl=60)
    first = cache.verify(token)
    assert cache.verify(token) == first and first.subject == "alice"
    assert checks == [token] and (cache.hits, cache.misses) == (1, 1)
    assert first.expires_at is not None
    clock.now = first.expires_at + POLICY.leeway  # the last instant it is still valid
    cache.verify(token)
    assert len(checks) == 1
    clock.now += 0.5  # past exp + leeway: never answered from memory again
    cache.verify(token)  # (the real clock still accepts it: verified again)
    assert len(checks) == 2 and cache.misses == 2


def test_refused_tokens_are_never_kept(checks: list[str]) -> None:
    cache = VerifiedTokens(POLICY)
    expired = issue_token("bob", Role.PLAYER, KEYS.issuer, ttl=1, now=time.time() - 60)
    for _ in range(3):
        with pytest.raises(Unauthenticated):
            cache.verify(expired)
        with pytest.raises(Unauthenticated):
            cache.verify("not-a-jwt")
    assert len(cache) == 0 and len(checks) == 6


def test_the_memory_is_bounded_least_recently_used_first(checks: list[str]) -> None:
    cache = VerifiedTokens(POLICY, size=2)
    a, b, c = (issue_token(p, Role.PLAYER, KEYS.issuer, ttl=60) for p in ("a", "b", "c"))
    cache.verify(a)
    cache.verify(b)
    cache.verify(a)  # a used last: b goes first
    cache.verify(c)
    assert len(cache) == 2
    cache.verify(a)
    cache.verify(b)
    assert checks == [a, b, c, b]
