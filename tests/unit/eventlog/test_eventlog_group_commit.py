"""Group commit (electric_eventlog.group) on every backend of the shared ``backend_engine``
fixture: SQLite and PostgreSQL (marked ``integration``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from electric_eventlog import migrate
from electric_eventlog.testing_group import GroupCommitCases
from sqlalchemy import Engine


class TestGroupCommit(GroupCommitCases):
    @pytest.fixture(autouse=True)
    def _engine(self, backend_engine: Engine) -> Iterator[None]:
        migrate(backend_engine)
        self.engine = backend_engine
        yield
