"""Reading PHH files for the audit tools: the file I/O the pure ``electric_domain.phh`` leaves
out. A ``.phhs`` file holds ``[N]`` sections (many hands), anything else one hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from electric_domain.phh import ReplayResult, replay_text


def is_multi(path: str | Path) -> bool:
    """True for a ``.phhs`` file (by its suffix, any case)."""
    return Path(path).suffix.lower() == ".phhs"


def read_phh(path: str | Path) -> str:
    """The text of a PHH file (UTF-8); OSError / UnicodeDecodeError when unreadable."""
    return Path(path).read_text(encoding="utf-8")


def replay_file(path: str | Path, *, keep_events: bool = False) -> Iterator[ReplayResult]:
    """Replay a ``.phh`` or ``.phhs`` file (by its suffix); ``keep_events`` as for
    :func:`electric_domain.phh.replay_text`."""
    yield from replay_text(read_phh(path), multi=is_multi(path), keep_events=keep_events)
