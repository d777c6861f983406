"""Provably fair draws: commit–reveal of a 32-byte seed and an unbiased weighted draw.

DRBG (documented so an auditor can re-implement it): block ``i`` (i = 0, 1, 2, ...) is
``HMAC-SHA256(key=seed, msg=label || i.to_bytes(8, "big"))``; the stream is the blocks
concatenated. Uniform integers below ``n`` are drawn by rejection sampling of 32-bit
big-endian words: a word ``w`` is accepted when ``w < limit = 2**32 - (2**32 mod n)`` and
the value is ``w mod n`` — no modulo bias. The sampler is `electric_domain.deck.uniform_below`
(the deck's stream has a fixed deck label, so this module keeps its own labelled stream).

The Prize Pool Multiplier draw takes ``u`` uniform in ``[0, weight_total)`` from the stream
labelled ``b"electric/multiplier/v1"`` and picks the first entry whose cumulative weight
exceeds ``u`` (entries in the configured order). The commitment is ``SHA-256(seed)`` hex,
published when the table opens; the seed is revealed when the table fills.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from electric_domain.deck import uniform_below
from electric_domain.tournament.config import PayTable

SEED_BYTES = 32
MULTIPLIER_LABEL = b"electric/multiplier/v1"
BUTTON_LABEL = b"electric/button/v1"


class Drbg:
    """HMAC-SHA256 counter-mode byte stream with unbiased integer sampling."""

    __slots__ = ("_buf", "_counter", "_label", "_seed")

    def __init__(self, seed: bytes, label: bytes) -> None:
        if len(seed) != SEED_BYTES:
            raise ValueError(f"seed must be {SEED_BYTES} bytes, got {len(seed)}")
        self._seed = seed
        self._label = label
        self._counter = 0
        self._buf = b""

    def read(self, n: int) -> bytes:
        while len(self._buf) < n:
            block = hmac.new(
                self._seed, self._label + self._counter.to_bytes(8, "big"), hashlib.sha256
            ).digest()
            self._counter += 1
            self._buf += block
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def next_u32(self) -> int:
        return int.from_bytes(self.read(4), "big")

    def below(self, n: int) -> int:
        """Uniform integer in [0, n), n <= 2**32, by rejection sampling of 32-bit words
        (the deck module's `uniform_below`, so both draws share one audited sampler)."""
        return uniform_below(n, self.next_u32)


def commitment(seed: bytes) -> str:
    """SHA-256 of the seed, hex; publish before the seed matters."""
    if len(seed) != SEED_BYTES:
        raise ValueError(f"seed must be {SEED_BYTES} bytes, got {len(seed)}")
    return hashlib.sha256(seed).hexdigest()


def weighted_index(weights: tuple[int, ...], u: int) -> int:
    """Index of the entry whose cumulative weight range contains ``u``."""
    acc = 0
    for i, w in enumerate(weights):
        acc += w
        if u < acc:
            return i
    raise ValueError(f"u={u} outside [0, {acc})")


@dataclass(frozen=True, slots=True)
class MultiplierDraw:
    """The outcome of a draw, with everything an auditor needs to re-check it."""

    commitment: str
    seed_hex: str
    u: int
    multiplier: int


def draw_multiplier(seed: bytes, table: PayTable) -> MultiplierDraw:
    """Map a 32-byte seed to a multiplier of the weighted table without bias."""
    u = Drbg(seed, MULTIPLIER_LABEL).below(table.weight_total)
    idx = weighted_index(tuple(e.weight for e in table.entries), u)
    return MultiplierDraw(commitment(seed), seed.hex(), u, table.entries[idx].multiplier)


def verify_multiplier(commitment_hex: str, seed_hex: str, multiplier: int, table: PayTable) -> bool:
    """Auditor check: the revealed seed matches the commitment and yields the multiplier."""
    try:
        seed = bytes.fromhex(seed_hex)
    except ValueError:
        return False
    if len(seed) != SEED_BYTES or not hmac.compare_digest(commitment(seed), commitment_hex):
        return False
    return draw_multiplier(seed, table).multiplier == multiplier


def initial_button_index(seed: bytes, seats: int) -> int:
    """First button seat, derived from the (committed, then revealed) multiplier seed."""
    return Drbg(seed, BUTTON_LABEL).below(seats)
