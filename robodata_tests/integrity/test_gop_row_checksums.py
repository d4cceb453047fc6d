"""Every column of a GOP row a read returns or decodes with is vouched for by ``row_xxh3``: a
flipped byte of a frame timestamp in gops.lance's data file, or a changed width, frame count or
packet size, makes every read of that GOP raise CorruptGopError naming the episode, camera and
GOP, and ``robodata verify`` fail. Tables written before row checksums existed still read;
verify says what is not covered, and episodes added to them keep the table's rule."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import robodata
from robodata.cli import main as cli
from robodata.errors import CorruptGopError
from robodata.format._keys import GOPS_KEY, keyed_merge
from robodata.format._renditions import RENDITION_COLUMN
from robodata.format._tables import gops_uri
from robodata.ingest import read_upload
from robodata.ingest._renditions import add_rendition
from robodata.integrity._gop_checksums import ROW_CHECKSUM_COLUMN
from robodata.integrity._verify import verify_dataset
from robodata.reader._dataset import gop_store
from robodata_tests.integrity.test_corruption import flip_gop_bytes

TOP = "observation_images_top"


def _gop_of(ds, episode: int, gop_index: int) -> tuple[list[int], int]:
    """Rows of ``ds`` whose top-camera frame is in GOP ``gop_index`` of ``episode``, and its ref_id."""
    rows = ds.to_table(columns=["episode_index", "observation_images_top_gop_index"])
    hit = (rows["episode_index"].to_numpy() == episode) & (
        rows["observation_images_top_gop_index"].to_numpy() == gop_index
    )
    at = np.flatnonzero(hit).tolist()
    [ref] = gop_store(ds).refs(at, TOP)
    return at, int(ref)


def flip_stored_int64(root: str, ref_id: int, value: int) -> Path:
    """Flip one byte of the int64 ``value`` in GOP ``ref_id``'s ``timestamps_ns`` where the data file
    holding the row stores it (values lie in row order: the k-th copy of ``value`` in the file is
    the k-th row holding it); returns the file changed. A failing disk, as issue 41 found it."""
    gops = lance.dataset(gops_uri(root))
    [address] = gops.to_table(columns=["ref_id"], filter=f"ref_id = {ref_id}", with_row_address=True)["_rowaddr"]
    fragment = gops.get_fragment(address.as_py() >> 32)
    rows = fragment.to_table(columns=["ref_id", "timestamps_ns"]).to_pylist()
    holding = [r["ref_id"] for r in rows for t in r["timestamps_ns"] if t == value]
    [data_file] = [f for f in fragment.data_files() if f.path.endswith(".lance")]
    path = Path(root) / "gops.lance" / "data" / data_file.path
    data, needle = path.read_bytes(), int(value).to_bytes(8, "little", signed=True)
    assert data.count(needle) == len(holding), f"{value} is not stored plainly in {path}"
    at = -1
    for _ in range(holding.index(ref_id) + 1):
        at = data.index(needle, at + 1)
    changed = bytearray(data)
    changed[at + 3] ^= 0x10
    path.write_bytes(bytes(changed))
    return path


def rewrite_gop_row(root: str, ref_id: int, **changes) -> None:
    """Store GOP ``ref_id``'s row again with ``changes`` to its columns and its checksums as they
    were (a writer or a tool that changed values behind robodata's back)."""
    gops = lance.dataset(gops_uri(root))
    names = [n for n in gops.schema.names if n != "gop"]
    row = gops.to_table(columns=names, filter=f"ref_id = {ref_id}", with_row_id=True)
    [(_, data)] = gops.read_blobs("gop", ids=row["_rowid"].to_pylist())
    values = {n: row[n].to_pylist() for n in names}
    values.update({name: [value] for name, value in changes.items()})
    values["gop"] = lance.blob_array([data])
    table = pa.table(values, schema=pa.schema([gops.schema.field(n) for n in [*names, "gop"]]))
    keyed_merge(gops, GOPS_KEY).when_matched_update_all().execute(table)


def _assert_every_read_names(root: str, rows: list[int], ref: int, episode: int, gop_index: int) -> None:
    ds = robodata.open(root)
    for read in (
        lambda: ds.get_frames(rows, cameras=TOP),
        lambda: ds.get_windows(rows[:1], [-1, 0], cameras=TOP),
        lambda: gop_store(ds).read([ref]),
        lambda: ds[rows[0]],
    ):
        with pytest.raises(CorruptGopError) as error:
            read()
        assert (error.value.episode_index, error.value.camera, error.value.gop_index) == (episode, "top", gop_index)
        assert f"GOP {gop_index} of episode {episode}, camera 'top' (ref_id {ref}) is corrupt: xxh3_64 of its " in str(
            error.value
        )
        assert "other columns is" in str(error.value)


def test_a_flipped_timestamp_byte_is_refused_by_reads_and_verify(dataset_copy, capsys):
    ds = robodata.open(dataset_copy)
    rows, ref = _gop_of(ds, 1, 5)
    times = ds.get_frames(rows, cameras=TOP).timestamps_ns["top"]
    stored = lance.dataset(gops_uri(dataset_copy)).to_table(columns=["timestamps_ns"], filter=f"ref_id = {ref}")
    flip_stored_int64(dataset_copy, ref, int(times[-1]))
    flipped = lance.dataset(gops_uri(dataset_copy)).to_table(columns=["timestamps_ns"], filter=f"ref_id = {ref}")
    assert flipped["timestamps_ns"][0].as_py()[:-1] == stored["timestamps_ns"][0].as_py()[:-1]
    assert flipped["timestamps_ns"][0].as_py()[-1] != int(times[-1])  # the frame time Lance now returns
    _assert_every_read_names(dataset_copy, rows, ref, 1, 5)
    report = verify_dataset(dataset_copy)
    [problem] = report.problems
    assert problem.startswith(f"GOP 5 of episode 1, camera 'top' (ref_id {ref}) is corrupt: xxh3_64 of its other")
    assert cli(["verify", dataset_copy, "--decode"]) == 1
    assert f"GOP 5 of episode 1, camera 'top' (ref_id {ref}) is corrupt" in capsys.readouterr().out
    # The other GOPs read as before.
    other, _ = _gop_of(ds, 0, 5)
    np.testing.assert_array_equal(
        robodata.open(dataset_copy).get_frames(other, cameras=TOP)[TOP], ds.get_frames(other, cameras=TOP)[TOP]
    )


@pytest.mark.parametrize(
    "change",
    [
        {"width": 642},
        {"n_frames": 3},
        {"packet_sizes": None},  # the first two packets' sizes swapped: same total, other cuts
        {"timestamps_ns": None},  # every frame 1 ns later
    ],
    ids=["width", "n_frames", "packet_sizes", "timestamps_ns"],
)
def test_a_changed_column_is_refused_by_reads_and_verify(dataset_copy, change):
    ds = robodata.open(dataset_copy)
    rows, ref = _gop_of(ds, 2, 3)
    stored = lance.dataset(gops_uri(dataset_copy)).to_table(
        filter=f"ref_id = {ref}", columns=["packet_sizes", "timestamps_ns"]
    )
    if "packet_sizes" in change:
        sizes = stored["packet_sizes"].to_pylist()[0]
        assert sizes[0] != sizes[1]
        change = {"packet_sizes": [sizes[1], sizes[0], *sizes[2:]]}
    if "timestamps_ns" in change:
        change = {"timestamps_ns": [t + 1 for t in stored["timestamps_ns"].to_pylist()[0]]}
    rewrite_gop_row(dataset_copy, ref, **change)
    _assert_every_read_names(dataset_copy, rows, ref, 2, 3)
    problem = verify_dataset(dataset_copy).problems[0]  # a frame count also breaks the rows' references
    assert f"GOP 3 of episode 2, camera 'top' (ref_id {ref}) is corrupt: xxh3_64 of its other columns" in problem


def test_a_row_rewritten_as_it_was_still_reads(dataset_copy):
    ds = robodata.open(dataset_copy)
    rows, ref = _gop_of(ds, 2, 3)
    rewrite_gop_row(dataset_copy, ref)  # the same values: the rewrite itself is not what is refused
    np.testing.assert_array_equal(
        robodata.open(dataset_copy).get_frames(rows, cameras=TOP)[TOP], ds.get_frames(rows, cameras=TOP)[TOP]
    )
    assert verify_dataset(dataset_copy).ok


def test_a_table_without_row_checksums_reads_and_verify_says_what_is_not_covered(dataset_copy, uploads):
    gops = lance.dataset(gops_uri(dataset_copy))
    gops.drop_columns([ROW_CHECKSUM_COLUMN])  # as a table written before row checksums existed
    ds = robodata.open(dataset_copy)
    rows, ref = _gop_of(ds, 1, 2)
    assert ds.get_frames(rows, cameras=TOP)[TOP].shape[0] == len(rows)
    report = verify_dataset(dataset_copy)
    assert report.ok, report.problems
    [note] = [n for n in report.notes if "no row checksum" in n]
    assert note.startswith(f"gops.lance: {gops.count_rows()} GOP rows have no row checksum")
    assert "their timestamps, packet sizes and other columns are not vouched for" in note
    # An episode added to it goes without a row checksum too: one table, one rule.
    episode = dataclasses.replace(read_upload(uploads[0]), episode_index=7, episode_id="episode_7", fingerprint="7")
    assert robodata.write_episode(episode, dataset_copy).gops_written > 0
    gops = lance.dataset(gops_uri(dataset_copy))
    assert ROW_CHECKSUM_COLUMN not in gops.schema.names and gops.count_rows(filter="episode_index = 7") > 0
    # Its bytes are still checked on every read.
    flip_gop_bytes(dataset_copy, gop_store(ds).read([ref])[ref])
    with pytest.raises(CorruptGopError, match="xxh3_64 of its bytes is"):
        robodata.open(dataset_copy).get_frames(rows, cameras=TOP)


def test_no_rendition_is_made_from_a_changed_row(dataset_copy):
    ds = robodata.open(dataset_copy)
    _, ref = _gop_of(ds, 0, 1)
    stored = lance.dataset(gops_uri(dataset_copy)).to_table(columns=["timestamps_ns"], filter=f"ref_id = {ref}")
    rewrite_gop_row(dataset_copy, ref, timestamps_ns=[t + 5 for t in stored["timestamps_ns"][0].as_py()])
    with pytest.raises(CorruptGopError, match=r"GOP 1 of episode 0, camera 'top' .* is corrupt: xxh3_64 of its other"):
        add_rendition(dataset_copy, "88x72", cameras=["top"])
    gops = lance.dataset(gops_uri(dataset_copy))
    assert RENDITION_COLUMN not in gops.schema.names or gops.count_rows(filter=f"{RENDITION_COLUMN} IS NOT NULL") == 0
