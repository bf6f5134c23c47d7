"""Helpers the test files share: import them as `from support.<module> import ...` (pytest puts tests/ on
the path, see [tool.pytest.ini_options] in pyproject.toml)."""
