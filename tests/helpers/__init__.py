"""Helpers the tests of several packages share; fixtures stay in the ``conftest.py`` files."""
