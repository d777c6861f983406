"""A progress bar for the long checks (``make exhaustive``): tqdm on the terminal, past
pytest's output capture, updated per chunk of work so the hot loops stay in C."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from tqdm import tqdm


@contextmanager
def progress(
    capsys: pytest.CaptureFixture[str], total: int, desc: str, unit: str
) -> Iterator[tqdm]:  # type: ignore[type-arg]
    """A tqdm bar of ``total`` ``unit`` shown while the block runs (capture suspended)."""
    with (
        capsys.disabled(),
        tqdm(
            total=total, desc=desc, unit=unit, unit_scale=True, mininterval=0.5, leave=True
        ) as bar,
    ):
        yield bar
