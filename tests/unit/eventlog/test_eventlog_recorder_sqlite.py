"""The reusable recorder cases (electric_eventlog.testing) on SQLite, the embedded default."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from electric_eventlog import create_engine, migrate
from electric_eventlog.testing import RecorderCases


class TestSqliteRecorder(RecorderCases):
    @pytest.fixture(autouse=True)
    def _sqlite_engine(self, tmp_path: Path) -> Iterator[None]:
        self.engine = create_engine(f"sqlite:///{tmp_path / 'events.db'}")
        migrate(self.engine)
        yield
        self.engine.dispose()
