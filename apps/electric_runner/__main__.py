"""``python -m electric_runner`` (``make run``): the embedded platform with bots playing."""

from __future__ import annotations

from electric_runner.app import main

if __name__ == "__main__":
    raise SystemExit(main())
