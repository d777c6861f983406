"""Casino math kernel: the per-board pass (rank 1,081 hands, sort, win/tie counts by
inclusion–exclusion) in numba, numpy (vectorised over a batch of boards) and C (gcc -O3 via
ctypes). Figures are µs per board; the numba figure is what ``electric_math`` uses.

Then the casino rounds through the four services on PostgreSQL (:mod:`bench.casino_services`:
THB rounds per second, UTH settlement time for 100 seated players); skip those with
``BENCH_CASINO_SERVICES=0``."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from electric_math import kernel as k
from electric_math import tables
from numba import njit

from bench import Row

N = 20000


def _inputs() -> tuple[Any, ...]:
    boards = k.all_boards()[::97][:N].copy()  # a spread of boards
    c1, c2, _ = k.combo_tables()
    return boards, tables.nonflush_table(), tables.flush_table(), tables.offsets(), c1, c2


@njit(cache=True)
def _numba_many(boards: Any, nf: Any, ft: Any, off: Any, c1: Any, c2: Any) -> int:
    r = np.zeros(1326, np.int32)
    w = np.zeros(1326, np.int64)
    t = np.zeros(1326, np.int64)
    a = np.zeros(1326, np.int64)
    b = np.zeros(1326, np.int64)
    keys = np.zeros(1326, np.int64)
    s = 0
    for i in range(boards.shape[0]):
        k.board_pass(boards[i], nf, ft, off, c1, c2, r, w, t, a, b, keys)
        s += w[1325] + t[0]
    return s


def numpy_wins(boards: Any, nf: Any, ft: Any, off: Any, c1: Any, c2: Any) -> Any:
    """Wins of every hand on every board, vectorised with numpy (same maths)."""
    nb = len(boards)
    b = boards.astype(np.int64)
    cnt = np.zeros((nb, 13), np.int64)
    for j in range(5):
        np.add.at(cnt, (np.arange(nb), b[:, j] >> 2), 1)
    r1, r2 = c1 >> 2, c2 >> 2
    full = cnt[:, None, :].repeat(1326, axis=1)
    full[:, np.arange(1326), r1] += 1
    full[:, np.arange(1326), r2] += 1
    ok = (full <= 4).all(axis=2)
    kk = 7 - np.concatenate([np.zeros((nb, 1326, 1), np.int64), full.cumsum(axis=2)], axis=2)
    idx = np.zeros((nb, 1326), np.int64)
    for i in range(13):
        idx += off[i, np.clip(kk[:, :, i], 0, 7), np.clip(full[:, :, i], 0, 4)]
    ranks = np.where(ok, nf[np.clip(idx, 0, len(nf) - 1)], 0)
    suits = b & 3
    for s in range(4):
        on = suits == s
        base = (on.sum(axis=1))[:, None] + ((c1 & 3) == s) + ((c2 & 3) == s)
        mask = (
            (np.where(on, 1 << (b >> 2), 0).sum(axis=1))[:, None]
            | np.where((c1 & 3) == s, 1 << r1, 0)
            | np.where((c2 & 3) == s, 1 << r2, 0)
        )
        ranks = np.where(base >= 5, np.maximum(ranks, ft[mask]), ranks)
    used = np.zeros((nb, 52), bool)
    used[np.arange(nb)[:, None], b] = True
    live = ~(used[:, c1] | used[:, c2])
    big = 1 << 14
    key = np.where(live, ranks, big - 1) + np.arange(nb)[:, None] * big
    flat = np.sort(key, axis=None)
    less_all = np.searchsorted(flat, key) - np.arange(nb)[:, None] * 1326
    # per card: hands holding it, sorted, for the card-removal terms
    holders = [np.nonzero((c1 == c) | (c2 == c))[0] for c in range(52)]
    per = np.stack([key[:, h] for h in holders], axis=1)  # nb × 52 × 51
    per = per + (np.arange(52)[None, :, None] * nb * big)
    pflat = np.sort(per, axis=None)

    def less_card(cards: Any) -> Any:
        q = key + cards[None, :] * nb * big
        return np.searchsorted(pflat, q) - (cards[None, :] * nb + np.arange(nb)[:, None]) * 51

    return np.where(live, less_all - less_card(c1) - less_card(c2), 0)


def _c_lib() -> Any:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    out = Path(tempfile.mkdtemp()) / "board_pass.so"
    src = Path(__file__).with_name("casino_board_pass.c")
    subprocess.run([cc, "-O3", "-march=native", "-shared", "-fPIC", str(src), "-o", str(out)],
                   check=True)  # fmt: skip
    return ctypes.CDLL(str(out))


def run() -> list[Row]:
    boards, nf, ft, off, c1, c2 = _inputs()
    _numba_many(boards[:10], nf, ft, off, c1, c2)
    t0 = time.perf_counter()
    _numba_many(boards, nf, ft, off, c1, c2)
    numba_us = (time.perf_counter() - t0) / N * 1e6
    t0 = time.perf_counter()
    nb = 2000
    for lo in range(0, nb * 2, nb):
        numpy_wins(boards[lo : lo + nb], nf, ft, off, c1, c2)
    numpy_us = (time.perf_counter() - t0) / (2 * nb) * 1e6
    rows = [
        Row("casino", "board pass numba", numba_us, "µs/board"),
        Row("casino", "board pass numpy (batch 2000)", numpy_us, "µs/board",
            "numba", numba_us),
    ]  # fmt: skip
    lib = _c_lib()
    if lib is not None:
        p = ctypes.c_void_p
        args = [a.ctypes.data_as(p) for a in (boards, nf, ft, off, c1, c2)]
        chk = np.zeros(1, np.int64)
        t0 = time.perf_counter()
        lib.many(args[0], ctypes.c_int64(N), *args[1:], chk.ctypes.data_as(p))
        c_us = (time.perf_counter() - t0) / N * 1e6
        rows.append(Row("casino", "board pass C -O3 (ctypes)", c_us, "µs/board", "numba",
                        numba_us))  # fmt: skip
    if os.environ.get("BENCH_CASINO_SERVICES", "1") != "0":
        from bench import casino_services  # rounds through the services (PostgreSQL)

        rows += casino_services.run()
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row.name:<34} {row.value:>9.1f} {row.unit}  (ratio to numba {row.ratio})")
