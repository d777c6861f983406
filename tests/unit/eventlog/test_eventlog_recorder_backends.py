"""The reusable recorder cases (electric_eventlog.testing) on every backend of the shared
``backend_engine`` fixture (tests/support/backends.py): SQLite, the embedded default, and
PostgreSQL (marked ``integration``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from electric_eventlog import migrate
from electric_eventlog.testing import RecorderCases
from sqlalchemy import Engine


class TestRecorder(RecorderCases):
    @pytest.fixture(autouse=True)
    def _engine(self, backend_engine: Engine) -> Iterator[None]:
        migrate(backend_engine)
        self.engine = backend_engine
        yield
