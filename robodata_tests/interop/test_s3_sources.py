"""Imports read their sources straight from s3:// (moto's server on 127.0.0.1) through fsspec."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import robodata
from robodata.format._provenance import UPLOAD_COLUMNS
from robodata.interop import import_hdf5
from robodata.lerobot import export_lerobot, import_lerobot

from .test_hdf5_import import STEPS, _write_episode


def test_lerobot_dataset_on_s3_imports_like_a_local_one(exported, s3, s3_root, tmp_path):
    s3_options = s3.storage_options
    uri = s3.put_tree(Path(exported), f"{s3_root}/lerobot/sample")
    from_s3, from_disk = str(tmp_path / "from_s3"), str(tmp_path / "from_disk")
    result = import_lerobot(uri, from_s3, episodes=[2], source_storage_options=s3_options, progress=False)
    assert result.imported == [2]
    import_lerobot(exported, from_disk, episodes=[2], progress=False)
    a, b = robodata.open(from_s3), robodata.open(from_disk)
    assert (
        a.to_table()
        .drop_columns(["observation_images_top_ref_id", *UPLOAD_COLUMNS])  # provenance: where it came from
        .equals(b.to_table().drop_columns(["observation_images_top_ref_id", *UPLOAD_COLUMNS]))
    )
    rows = np.arange(len(a))
    np.testing.assert_array_equal(
        a.get_frames(rows, cameras="top")["top"],
        b.get_frames(rows, cameras="top")["top"],
    )
    assert a.metadata.extra["imported_from"]["repo_id"] == "sample"


def test_hdf5_glob_on_s3_into_a_dataset_on_s3_and_out_to_lerobot(s3, s3_root, tmp_path):
    s3_options = s3.storage_options
    local = tmp_path / "aloha"
    local.mkdir()
    for n in (0, 1):
        _write_episode(local / f"episode_{n}.hdf5", n, compress=bool(n))
    s3.put_tree(local, f"{s3_root}/aloha")
    target = f"{s3_root}/datasets/aloha"
    result = import_hdf5(f"{s3_root}/aloha/episode_*.hdf5", target, storage_options=s3_options, progress=False)
    assert result.imported == [0, 1] and result.rows == 2 * STEPS
    ds = robodata.open(target, storage_options=s3_options)
    assert len(ds) == 2 * STEPS and ds.cameras == ["cam_high", "cam_left_wrist"]
    again = import_hdf5(f"{s3_root}/aloha/episode_*.hdf5", target, storage_options=s3_options, progress=False)
    assert again.skipped == [0, 1]

    exported = export_lerobot(target, tmp_path / "lerobot", storage_options=s3_options, progress=False)
    assert (exported.episodes, exported.frames, exported.fps) == (2, 2 * STEPS, 50)
    info = json.loads((tmp_path / "lerobot/meta/info.json").read_text())
    assert info["features"]["observation_qvel"] == {"dtype": "float32", "shape": [14], "names": None}
