"""The table service's modules by their names in the tree under test.

Issue 25 item 1 moved them into ``host/``, ``tournament/`` and ``casino/{thb,uth}/``; a base
revision from before keeps the old names (``electric_table.runtime``,
``electric_table.casino.uth_tables``...). The harness runs on both, so it asks for the new
name and falls back to the old one only when the new module's package does not exist there.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def load(new: str, old: str) -> ModuleType:
    """Module ``new``, or ``old`` in a tree from before the move."""
    try:
        return importlib.import_module(new)
    except ModuleNotFoundError as exc:
        if exc.name is None or not new.startswith(exc.name):
            raise  # something the module itself imports is missing: a real error
        return importlib.import_module(old)
