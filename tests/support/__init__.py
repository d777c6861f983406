"""Shared test code (harnesses, fixtures, infrastructure selection), imported as
``tests.support.<module>``; the repository root is on the test path via
``[tool.pytest.ini_options] pythonpath`` in pyproject.toml."""
