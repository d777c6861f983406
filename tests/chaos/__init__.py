"""The chaos run of issue 18 (``make chaos``, ``python -m tests.chaos``): see docs/chaos.md."""
