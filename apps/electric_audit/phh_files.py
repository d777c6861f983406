"""Reading PHH files for the audit tools: the file I/O the pure ``electric_domain.phh`` leaves
out. A ``.phhs`` file holds ``[N]`` sections (many hands), anything else one hand.

A large ``.phhs`` file is replayed by several processes (``jobs``, default one per CPU this
process may use): its text is cut at section headers into contiguous parts, each part is
replayed on its own (a hand's index is its own ``[N]``), and the results come back in the
file's order, the same as one process gives (a test checks it on the 10,000-hand corpus).
Issue 26: the corpus took 1.3 s in one process against a 1 s target, almost all of it the
engine's own steps, which are independent per hand."""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from electric_domain.phh import ReplayResult, replay_text
from electric_domain.phh.parse import SECTION

#: Hands a file needs before it is shared between processes (starting them costs ~50 ms).
PARALLEL_FROM = 2_000


def is_multi(path: str | Path) -> bool:
    """True for a ``.phhs`` file (by its suffix, any case)."""
    return Path(path).suffix.lower() == ".phhs"


def read_phh(path: str | Path) -> str:
    """The text of a PHH file (UTF-8); OSError / UnicodeDecodeError when unreadable."""
    return Path(path).read_text(encoding="utf-8")


def default_jobs() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def replay_file(
    path: str | Path, *, keep_events: bool = False, jobs: int = 1
) -> Iterator[ReplayResult]:
    """Replay a ``.phh`` or ``.phhs`` file (by its suffix); ``keep_events`` as for
    :func:`electric_domain.phh.replay_text`; ``jobs`` processes for a large ``.phhs``
    file (module doc)."""
    text, multi = read_phh(path), is_multi(path)
    parts = split_sections(text, jobs) if multi and jobs > 1 and not keep_events else []
    if len(parts) < 2:
        yield from replay_text(text, multi=multi, keep_events=keep_events)
        return
    fork = "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if fork else None)
    with ProcessPoolExecutor(max_workers=len(parts), mp_context=context) as pool:
        for results in pool.map(_replay_part, parts):
            yield from results


def split_sections(text: str, parts: int) -> list[str]:
    """``text`` cut at section headers into at most ``parts`` contiguous pieces of about
    the same number of hands (one piece, or none for no sections, below
    :data:`PARALLEL_FROM` hands). Text before the first header belongs to no hand."""
    starts = [m.start() for m in SECTION.finditer(text)]
    if len(starts) < PARALLEL_FROM:
        return [text[starts[0] :]] if starts else []
    size = -(-len(starts) // parts)
    cuts = [*starts[::size], len(text)]
    return [text[a:b] for a, b in itertools.pairwise(cuts)]


def _replay_part(text: str) -> list[ReplayResult]:
    return list(replay_text(text, multi=True))
