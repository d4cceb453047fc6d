"""Training renditions: written from the stored full-resolution GOPs, frame-exact against a
reference resize, added without touching the full-resolution GOPs or the rows, written at ingest
once declared, chosen by the readers, kept by garbage collection, listed by ``info``."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from PIL import Image

import robodata
from benchmarks.storage import video_bytes
from robodata.codec import plain_decode_gop
from robodata.format._renditions import (
    RENDITION_COLUMN,
    SOURCE_COLUMN,
    Rendition,
    rendition_ref_id,
    without_renditions_of_kept_gops,
)
from robodata.format._tables import gops_uri, open_table
from robodata.ingest._renditions import add_rendition, declare_rendition
from robodata.integrity._verify import verify_dataset
from robodata.reader._dataset import gop_store
from robodata_tests.ingest.camera_uploads import write_real_video_upload

TOP = "observation_images_top"


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float(10 * np.log10(255.0**2 / mse))


def _reference_resize(frames: np.ndarray, height: int, width: int) -> np.ndarray:
    """Pillow's box filter on the RGB frames: an independent resize to compare against."""
    return np.stack([np.asarray(Image.fromarray(f).resize((width, height), Image.BOX)) for f in frames])


@pytest.fixture(scope="module")
def real_dataset(tmp_path_factory) -> str:
    """One episode of real camera footage (176x144, 120 frames)."""
    base = tmp_path_factory.mktemp("real")
    upload = write_real_video_upload(base / "uploads" / "real_000")
    root = str(base / "ds")
    robodata.ingest_episode(str(upload), root)
    return root


def _table_files(root: str, table: str) -> dict[str, int]:
    folder = os.path.join(root, table, "data")
    return {name: os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder)}


def test_rendition_frames_match_a_reference_resize_of_the_decoded_frames(real_dataset, tmp_path):
    root = str(tmp_path / "ds")
    shutil.copytree(real_dataset, root)
    add_rendition(root, "88x72")
    ds = robodata.open(root)
    column = "observation_images_car"
    rows = np.arange(len(ds))
    full = ds.get_frames(rows, cameras="car")["car"]
    small = ds.get_frames(rows, cameras="car", resolution=(72, 88))["car"]
    assert small.shape == (len(ds), 72, 88, 3)
    reference = _reference_resize(full, 72, 88)
    # Frame-exact: each row's rendition frame is its own frame resized (the worst frame, not the mean).
    worst = min(_psnr(small[i], reference[i]) for i in range(0, len(ds), 10))
    assert worst > 30.0
    shifted = min(_psnr(small[i], reference[i + 30]) for i in range(0, len(ds) - 30, 10))
    assert shifted < worst - 3  # the tolerance tells neighbouring frames apart
    # The rendition GOPs were decoded, not the full-resolution ones.
    refs = gop_store(ds).refs(rows, column, (72, 88))
    gops = open_table(gops_uri(root)).to_table(columns=["ref_id", RENDITION_COLUMN, "width", "height"])
    stored = {r["ref_id"]: r for r in gops.to_pylist()}
    assert {(stored[r][RENDITION_COLUMN], stored[r]["width"], stored[r]["height"]) for r in refs.tolist()} == {
        ("88x72", 88, 72)
    }


def test_adding_a_rendition_leaves_full_gops_and_rows_untouched(dataset_copy):
    root = dataset_copy
    before = robodata.open(root)
    frames_before = before.lance_dataset.to_table(with_row_id=True)
    gops = open_table(gops_uri(root))
    full_columns = [n for n in gops.schema.names if n != "gop"]
    gops_before = gops.to_table(columns=full_columns, with_row_id=True)
    blobs_before = [b for _, b in gops.read_blobs("gop", ids=gops_before["_rowid"].to_pylist(), preserve_order=True)]
    frame_files, gop_files = _table_files(root, "frames.lance"), _table_files(root, "gops.lance")
    video_before = video_bytes(before)

    result = add_rendition(root, "224x224")

    after = robodata.open(root)
    assert after.version == before.version + 1 == result.frames_version
    assert after.metadata.renditions == {c: ["224x224"] for c in before.cameras}
    assert after.lance_dataset.to_table(with_row_id=True).equals(frames_before)
    assert _table_files(root, "frames.lance") == frame_files  # a metadata-only commit
    gops = open_table(gops_uri(root))
    full_after = gops.to_table(columns=full_columns, filter=f"{RENDITION_COLUMN} IS NULL", with_row_id=True)
    assert full_after.equals(gops_before)  # same row ids, same values
    after_blobs = [b for _, b in gops.read_blobs("gop", ids=full_after["_rowid"].to_pylist(), preserve_order=True)]
    assert after_blobs == blobs_before
    files_after = _table_files(root, "gops.lance")
    assert {k: files_after[k] for k in gop_files} == gop_files  # old data files kept as they were
    renditions = gops.to_table(
        columns=["ref_id", "episode_index", "camera", "gop_index", "n_frames", SOURCE_COLUMN],
        filter=f"{RENDITION_COLUMN} = '224x224'",
    )
    assert renditions.num_rows == gops_before.num_rows == result.gops_written
    # Same GOP boundaries and frame counts as the source GOP of each rendition GOP.
    source = {r["ref_id"]: r for r in gops_before.to_pylist()}
    for row in renditions.to_pylist():
        src = source[row[SOURCE_COLUMN]]
        assert (row["episode_index"], row["camera"], row["gop_index"], row["n_frames"]) == (
            src["episode_index"],
            src["camera"],
            src["gop_index"],
            src["n_frames"],
        )
        assert row["ref_id"] == rendition_ref_id(src["ref_id"], "224x224")
    assert video_bytes(after) == video_before  # the dataset's video: full-resolution GOPs only
    # verify checks the rendition GOPs too: checksums, frame counts and sizes.
    report = verify_dataset(root, decode=True)
    assert report.ok and report.gops.checked == 2 * gops_before.num_rows
    # Adding it again stores nothing new and makes no version.
    again = add_rendition(root, "224x224")
    assert (again.gops_written, again.frames_version) == (0, result.frames_version)
    # A rendition GOP decodes to exactly its own frames (its source's frame count, its size).
    first = gops.to_table(columns=["n_frames"], filter=f"{RENDITION_COLUMN} = '224x224'", with_row_id=True)
    [(_, data)] = gops.read_blobs("gop", ids=first["_rowid"].to_pylist()[:1])
    decoded = plain_decode_gop(data)
    assert len(decoded) == first["n_frames"][0].as_py() and decoded[0].shape == (224, 224, 3)


def test_readers_pick_the_rendition_and_fall_back_to_the_same_resize(dataset_copy):
    root = dataset_copy
    declare_rendition(root, "224x224")  # declared, no GOPs yet: every read scales the full frames
    ds = robodata.open(root)
    rows = [0, 17, 90, len(ds) - 1]
    scaled = ds.get_frames(rows, cameras="top", resolution=(224, 224))["top"]
    add_rendition(root, "224x224")
    ds = robodata.open(root)
    stored = ds.get_frames(rows, cameras="top", resolution=(224, 224))["top"]
    assert scaled.shape == stored.shape == (4, 224, 224, 3)
    assert not np.array_equal(scaled, stored)  # from the rendition GOPs now
    assert min(_psnr(a, b) for a, b in zip(scaled, stored, strict=True)) > 25.0
    # A size no rendition has: the smallest rendition that fits, scaled (not the full frame).
    rendition_refs = set(gop_store(ds).refs(rows, TOP, (224, 224)).tolist())
    assert set(gop_store(ds).refs(rows, TOP, (112, 112)).tolist()) == rendition_refs
    assert ds.get_frames(rows, cameras="top", resolution=(112, 112))["top"].shape == (4, 112, 112, 3)
    # A size larger than every rendition decodes the full frames.
    assert set(gop_store(ds).refs(rows, TOP, (240, 320)).tolist()).isdisjoint(rendition_refs)
    windows = ds.get_windows(rows, range(-2, 1), cameras="top", resolution=(224, 224))
    assert windows.data["top"].shape == (4, 3, 224, 224, 3)
    np.testing.assert_array_equal(windows.data["top"][:, -1], stored)
    # A dataset without renditions reads as before at its own size.
    assert ds.get_frames(rows, cameras="top")["top"].shape == (4, 480, 640, 3)


def test_ingest_writes_the_declared_renditions(sample_uploads, tmp_path):
    root = str(tmp_path / "ds")
    robodata.ingest_episode(str(sample_uploads[0]), root)
    declare_rendition(root, "320x240", cameras=["top"])
    robodata.ingest_episode(str(sample_uploads[1]), root)
    gops = open_table(gops_uri(root)).to_table(columns=["episode_index", "camera", RENDITION_COLUMN])
    counts = gops.group_by(["episode_index", "camera", RENDITION_COLUMN]).aggregate([("camera", "count")])
    got = {(r["episode_index"], r["camera"], r[RENDITION_COLUMN]): r["camera_count"] for r in counts.to_pylist()}
    assert got[(1, "top", "320x240")] == got[(1, "top", None)]
    assert (0, "top", "320x240") not in got  # stored before the declaration: add_rendition does those
    assert not any(name is not None for (_, camera, name) in got if camera != "top")


def test_garbage_collection_keeps_renditions_of_kept_gops_and_drops_those_of_orphans(dataset_copy):
    from robodata.edits import collect_garbage

    add_rendition(dataset_copy, "224x224")
    collect_garbage(dataset_copy)
    gops = open_table(gops_uri(dataset_copy))
    assert gops.count_rows(f"{RENDITION_COLUMN} IS NOT NULL") == gops.count_rows(f"{RENDITION_COLUMN} IS NULL")
    robodata.open(dataset_copy).get_frames([0], cameras="top", resolution=(224, 224))
    # Which unreferenced GOPs go: a rendition follows its source.
    table = gops.to_table(columns=["ref_id", SOURCE_COLUMN], filter=f"{RENDITION_COLUMN} IS NOT NULL").to_pylist()
    (orphan_rendition, orphan_source), (kept_rendition, _) = [(r["ref_id"], r[SOURCE_COLUMN]) for r in table[:2]]
    orphans = [orphan_source, orphan_rendition, kept_rendition, 12345]
    assert without_renditions_of_kept_gops(gops, orphans) == [orphan_source, orphan_rendition, 12345]


def test_info_lists_the_renditions(dataset_copy, capsys):
    from robodata.cli import main

    assert main(["add-rendition", dataset_copy, "160x120", "--camera", "top"]) == 0
    assert "rendition 160x120 of top" in capsys.readouterr().out
    assert main(["info", dataset_copy]) == 0
    info = json.loads(capsys.readouterr().out)
    assert set(info["renditions"]) == {"top"}
    assert info["renditions"]["top"]["160x120"] == info["renditions"]["top"]["full"] > 0
    assert main(["add-rendition", dataset_copy, "161x120"]) != 0
    assert "even sizes" in capsys.readouterr().err
    assert main(["add-rendition", dataset_copy, "640x480", "--camera", "top"]) != 0
    assert "not smaller than camera 'top'" in capsys.readouterr().err


def test_rendition_names_and_sizes():
    assert Rendition.parse("224x224").size == (224, 224)
    assert Rendition.parse((240, 320)).name == "320x240"
    with pytest.raises(ValueError, match="WIDTHxHEIGHT"):
        Rendition.parse("224")
