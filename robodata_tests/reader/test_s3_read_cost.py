"""What a read costs on object storage, counted at the S3 server: one frame from a warm dataset
is at most two GETs (a small lookup plus the GOP's byte range), and a batch of frames in the same
GOPs coalesces into far fewer requests than frames."""

from __future__ import annotations

import numpy as np

import robodata


def _cost(s3, read) -> tuple[int, int]:
    """(GET requests, other requests) the server received while ``read()`` ran."""
    mark = s3.mark()
    read()
    requests = s3.requests(mark)
    gets = [r for r in requests if r.method == "GET" and not r.is_list]
    return len(gets), len(requests) - len(gets)


def test_requests_per_read(s3, s3_root, eight_short_uploads):
    options = s3.storage_options
    for upload in eight_short_uploads[:2]:
        robodata.ingest_episode(str(upload), s3_root, storage_options=options)
    ds = robodata.open(s3_root, storage_options=options)
    column = "observation_images_top"
    episode = ds.to_table(["episode_index"])["episode_index"].to_numpy()
    first_rows = [int(np.argmax(episode == e)) for e in (0, 1)]
    last_row = len(ds) - 1

    # Warm: the row and GOP indexes are loaded and each GOP data file's footer has been read.
    ds.get_frames(first_rows, cameras=column)

    # One frame from a GOP not read before: the blob's position, then its byte range.
    gets, others = _cost(s3, lambda: ds.get_frames([last_row], cameras=column))
    assert gets <= 2 and others == 0

    # A batch: every row of both episodes (one frame per row, four GOPs of this camera in two
    # data files) costs at most two GETs per data file.
    rows = np.arange(len(ds))
    gets, others = _cost(s3, lambda: ds.get_frames(rows, cameras=column))
    assert gets <= 2 * len(first_rows) < len(rows) and others == 0
