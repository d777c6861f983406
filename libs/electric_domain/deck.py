"""Provably fair deck: a 52-card order derived deterministically from a 32-byte seed.

Construction (also in ``docs/fairness.md``; an auditor can re-implement it from this text):

1. **Commitment.** ``commitment = SHA-256(seed).hexdigest()`` (lower-case hex). It is
   published before the hand starts; the seed is revealed after the hand ends.
2. **Random stream (HMAC-SHA256 in counter mode).** Block ``i`` (``i = 0, 1, 2, ...``) is
   ``HMAC-SHA256(key=seed, msg=b"electric-poker/deck/v1" || uint64_be(i))``; the stream is
   the concatenation ``block0 || block1 || ...``. 32-bit words are read from the stream as
   unsigned big-endian integers, 4 bytes at a time, in order.
3. **Unbiased integer in [0, n).** With ``limit = 2**32 - (2**32 % n)``, read words until
   one is ``< limit`` (rejection sampling) and return ``word % n``. Every value in
   ``[0, n)`` is then exactly equally likely (no modulo bias).
4. **Fisher–Yates.** Start from the ordered deck ``[0, 1, ..., 51]`` (card ``rank*4+suit``,
   ranks 2..A, suits c d h s — see :mod:`electric_domain.cards`). For ``i`` from 51 down to
   1: ``j = uniform(i + 1)``; swap positions ``i`` and ``j``. The result, read from position
   0 upwards, is the dealing order (the dealer's use of positions is documented in
   :mod:`electric_domain.holdem.driver`).

Seeds come from an injectable source: :func:`new_seed` uses :func:`secrets.token_bytes` (the
OS CSPRNG) unless given another callable, e.g. a fixed one in tests.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from secrets import token_bytes

SEED_BYTES = 32
DOMAIN_TAG = b"electric-poker/deck/v1"
_U32 = 1 << 32

SeedSource = Callable[[int], bytes]


def new_seed(source: SeedSource = token_bytes) -> bytes:
    """A fresh 32-byte seed from ``source(32)`` (default: the OS CSPRNG)."""
    seed = source(SEED_BYTES)
    _check_seed(seed)
    return seed


def _check_seed(seed: bytes) -> None:
    if not isinstance(seed, bytes | bytearray) or len(seed) != SEED_BYTES:
        raise ValueError(f"a deck seed is exactly {SEED_BYTES} bytes")


def commitment(seed: bytes) -> str:
    """SHA-256 of the seed, lower-case hex: publish this before the hand."""
    _check_seed(seed)
    return hashlib.sha256(seed).hexdigest()


class HmacCounterStream:
    """HMAC-SHA256(seed, tag || uint64_be(counter)) blocks as a stream of 32-bit words."""

    __slots__ = ("_buf", "_counter", "_key", "_pos")

    def __init__(self, seed: bytes) -> None:
        _check_seed(seed)
        self._key = bytes(seed)
        self._counter = 0
        self._buf = b""
        self._pos = 0

    def next_u32(self) -> int:
        """The next unsigned 32-bit big-endian word of the stream."""
        if self._pos + 4 > len(self._buf):
            self._buf = hmac.new(
                self._key, DOMAIN_TAG + self._counter.to_bytes(8, "big"), hashlib.sha256
            ).digest()
            self._counter += 1
            self._pos = 0
        word = int.from_bytes(self._buf[self._pos : self._pos + 4], "big")
        self._pos += 4
        return word

    def words(self) -> Iterator[int]:
        """Endless iterator over the words."""
        while True:
            yield self.next_u32()


def uniform_below(n: int, next_u32: Callable[[], int]) -> int:
    """An exactly uniform integer in ``[0, n)`` from 32-bit words (rejection sampling)."""
    if not 0 < n <= _U32:
        raise ValueError("n must be in 1..2**32")
    limit = _U32 - (_U32 % n)
    while True:
        word = next_u32()
        if word < limit:
            return word % n


def derive_deck(seed: bytes) -> tuple[int, ...]:
    """The 52-card order for ``seed`` (position 0 is dealt first)."""
    stream = HmacCounterStream(seed)
    nxt = stream.next_u32
    deck = list(range(52))
    for i in range(51, 0, -1):
        j = uniform_below(i + 1, nxt)
        deck[i], deck[j] = deck[j], deck[i]
    return tuple(deck)


@dataclass(frozen=True, slots=True)
class FairDeck:
    """A seed, its published commitment and the derived order."""

    seed: bytes
    commitment: str
    cards: tuple[int, ...]

    @classmethod
    def from_seed(cls, seed: bytes) -> FairDeck:
        return cls(bytes(seed), commitment(seed), derive_deck(seed))

    @classmethod
    def fresh(cls, source: SeedSource = token_bytes) -> FairDeck:
        return cls.from_seed(new_seed(source))


@dataclass(frozen=True, slots=True)
class Verification:
    """Outcome of :func:`verify_deck`; ``ok`` only when every check passed."""

    ok: bool
    commitment_matches: bool
    deck_matches: bool
    reason: str


def verify_deck(
    seed: bytes, published_commitment: str, dealt: tuple[int, ...] | None = None
) -> Verification:
    """Check a revealed seed against the commitment published before the hand and, when
    given, that the cards dealt (a prefix of the deck order, or the full 52) match."""
    try:
        actual = commitment(seed)
    except ValueError as exc:
        return Verification(False, False, False, str(exc))
    c_ok = hmac.compare_digest(actual, published_commitment.strip().lower())
    d_ok = True
    if dealt is not None:
        deck = derive_deck(seed)
        d_ok = tuple(dealt) == deck[: len(dealt)]
    reason = "ok"
    if not c_ok:
        reason = "SHA-256(seed) does not match the published commitment"
    elif not d_ok:
        reason = "the dealt cards are not the deck derived from the seed"
    return Verification(c_ok and d_ok, c_ok, d_ok, reason)
