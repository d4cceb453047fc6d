"""A dataset written before GOP checksums (format 1): it still reads (unverified), `robodata
verify` says its GOPs cannot be vouched for, appending to it is refused with the fix named, and
`robodata add-checksums` upgrades it in place without rewriting video."""

from __future__ import annotations

import lance
import numpy as np
import pytest

import robodata
from robodata.cli import main as cli
from robodata.errors import CorruptGopError, IncompatibleEpisodeError
from robodata.format.tables import gops_uri
from robodata.integrity.verify import verify_dataset
from robodata.reader import gop_store
from robodata_tests.edits.test_edits import _gops_data_files
from robodata_tests.integrity.test_corruption import flip_gop_bytes

TOP = "observation_images_top"


def test_a_format_1_dataset_reads_refuses_appends_and_upgrades(dataset_copy, tmp_path, capsys):
    frames = robodata.open(dataset_copy).get_frames([0, 150], cameras=TOP)[TOP]
    lance.dataset(gops_uri(dataset_copy)).drop_columns(["gop_xxh3"])  # as format 1 wrote it
    np.testing.assert_array_equal(robodata.open(dataset_copy).get_frames([0, 150], cameras=TOP)[TOP], frames)

    report = verify_dataset(dataset_copy)
    gops = lance.dataset(gops_uri(dataset_copy)).count_rows()
    assert report.problems == [
        f"{gops} GOPs have no stored checksum (written before format 2), so their bytes cannot be verified; "
        f"add checksums with `robodata add-checksums {dataset_copy}`"
    ]
    from robodata.sample_data import write_sample_uploads

    [upload] = write_sample_uploads(tmp_path / "more", episodes=1, seconds=0.5, start_index=3)
    version = robodata.open(dataset_copy).version
    fix = r"gops.lance was written before GOP checksums \(format 2\); upgrade it once with `robodata add-checksums"
    with pytest.raises(IncompatibleEpisodeError, match=fix):
        robodata.ingest_episode(str(upload), dataset_copy)
    assert robodata.open(dataset_copy).version == version

    video_files = _gops_data_files(dataset_copy)
    assert cli(["add-checksums", dataset_copy]) == 0
    assert f"added checksums to {gops} GOP rows" in capsys.readouterr().out
    after = _gops_data_files(dataset_copy)
    assert {k: after[k] for k in video_files} == video_files  # no video file rewritten
    assert verify_dataset(dataset_copy, decode=True).ok
    robodata.ingest_episode(str(upload), dataset_copy)
    assert verify_dataset(dataset_copy).ok
    # From now on reads verify.
    ds = robodata.open(dataset_copy)
    ref = int(gop_store(ds).refs([150], TOP)[0])
    flip_gop_bytes(dataset_copy, gop_store(ds).read([ref])[ref])
    with pytest.raises(CorruptGopError):
        robodata.open(dataset_copy).get_frames([150], cameras=TOP)
