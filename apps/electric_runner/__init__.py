"""electric_runner: the embedded platform (``python -m electric_runner`` = ``make run``).

The four services in one process over SQLite files and the in-process event bus, bot players
filling and playing tournaments at every buy-in, and a live summary. See docs/running.md.
"""
