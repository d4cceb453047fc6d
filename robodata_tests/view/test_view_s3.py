"""`robodata view` on an s3:// dataset: the page is read from and written to object storage."""

from __future__ import annotations

import robodata
from robodata.storage import fsspec_filesystem
from robodata.view import write_episode_page


def test_page_of_an_s3_episode_is_written_under_its_views(s3, s3_root, eight_short_uploads):
    options, root = s3.storage_options, f"{s3_root}/ds"
    robodata.ingest_episode(str(eight_short_uploads[4]), root, storage_options=options)
    uri = write_episode_page(root, 4, storage_options=options)
    assert uri == f"{root}/views/episode_000004.html"
    page = fsspec_filesystem(uri, options).cat_file(uri).decode()
    assert '<body data-ready="false" data-episode="4" data-version="1">' in page
    assert f"<dd>{root}</dd>" in page and page.count('<figure class="camera"') == 3
    assert options["aws_secret_access_key"] not in page
