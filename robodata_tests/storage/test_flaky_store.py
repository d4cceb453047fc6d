"""A store that resets about half its connections: creating a dataset (each table's first
manifest, a conditional PUT neither Lance nor its object store client retries) is retried like
every other commit and lands once; the dataset reads back whole."""

from __future__ import annotations

import pytest

import robodata
from robodata_tests.dataset_checks import assert_one_copy
from robodata_tests.fixtures.flaky_store import ResettingProxy


@pytest.mark.slow  # the object store client's own retries back off for seconds
def test_creating_a_dataset_on_a_store_that_resets_connections(s3, eight_short_uploads):
    s3.start()
    proxy = ResettingProxy(("127.0.0.1", s3.port), rate=0.5, seed=1)  # resets a first manifest's PUT
    try:
        options = {**s3.storage_options, "aws_endpoint": proxy.endpoint}
        root = s3.fresh_uri("resets")
        result = robodata.ingest_episode(str(eight_short_uploads[0]), root, storage_options=options)
        assert proxy.resets > 0
        proxy.armed.clear()  # read back over a calm connection
        assert_one_copy(robodata.open(root, storage_options=options), {0: result.rows})
        assert robodata.open(root, storage_options=options).version == 1
    finally:
        proxy.close()
