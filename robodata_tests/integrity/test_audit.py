"""Write, audit, publish (library level): an episode whose staged GOPs are corrupt or missing is
refused before its rows commit; the dataset's version and rows do not move."""

from __future__ import annotations

import lance
import pytest

import robodata
from robodata.errors import EpisodeAuditError
from robodata.format._tables import gops_uri
from robodata.format._versions import current_versions
from robodata.ingest import read_upload
from robodata.ingest._writer import write_frames, write_gops
from robodata_tests.integrity.test_corruption import flip_gop_bytes


def _stage(root: str, upload) -> tuple:
    episode = read_upload(str(upload))
    return episode, write_gops(episode, root)


def test_a_corrupt_staged_gop_is_never_committed(eight_short_uploads, tmp_path):
    root = str(tmp_path / "ds")
    first = robodata.ingest_episode(str(eight_short_uploads[0]), root)
    episode, staged = _stage(root, eight_short_uploads[1])
    ref = staged.cameras["wrist_left"].ref_ids[1]
    gops = lance.dataset(gops_uri(root))
    [row_id] = gops.to_table(columns=[], filter=f"ref_id = {ref}", with_row_id=True)["_rowid"].to_pylist()
    [(_, data)] = gops.read_blobs("gop", ids=[row_id])
    flip_gop_bytes(root, data)
    with pytest.raises(EpisodeAuditError) as error:
        write_frames(episode, root, staged)
    message = str(error.value)
    assert message.startswith(
        "episode 1 was not committed (the dataset's version is unchanged); its checks failed: "
        "staged_gops_decode: 1 problem(s) with the staged GOPs: GOP 1 of episode 1, "
        f"camera 'wrist_left' (ref_id {ref}) is corrupt: xxh3_64"
    )
    assert {name: r.passed for name, r in error.value.results.items()} == {
        "staged_gops_decode": False,
        "references_resolve": True,
        "alignment_within_half_period": True,
        "row_count_matches_upload": True,
    }
    assert current_versions(root).frames == first.frames_version
    assert robodata.open(root).episodes()["episode_index"].to_pylist() == [0]


def test_a_staged_gop_that_vanished_is_never_committed(eight_short_uploads, tmp_path):
    root = str(tmp_path / "ds")
    episode, staged = _stage(root, eight_short_uploads[2])
    lance.dataset(gops_uri(root)).delete(f"ref_id = {staged.cameras['top'].ref_ids[0]}")
    with pytest.raises(EpisodeAuditError, match="1 staged GOPs are not in gops.lance") as error:
        write_frames(episode, root, staged)
    assert "references_resolve: episode 2: rows point at GOPs that are missing" in str(error.value)
    assert current_versions(root).frames is None  # frames.lance was never created
