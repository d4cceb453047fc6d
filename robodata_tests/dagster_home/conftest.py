"""The defs/ fixtures (sample uploads and a store over them) for the dagster_home tests."""

from robodata_tests.defs.conftest import short_uploads, store  # noqa: F401  (pytest finds fixtures by name)
