"""A local dataset's GOP bytes are read straight from gops.lance's data files: byte for byte
what Lance's read_blobs returns, for every GOP, through renditions (a second data file per
fragment) and deletions; anything not plainly inline is left to Lance."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import robodata
from robodata.edits import delete_episodes
from robodata.ingest._renditions import add_rendition
from robodata.integrity._local_gop_files import OFF_SWITCH, LayoutDriftError, LocalGopFiles
from robodata.reader._dataset import gop_store


def _every_gop_both_ways(root: str) -> tuple[list[bytes], list[bytes]]:
    store = gop_store(robodata.open(root))
    positions = np.arange(len(store.index))
    direct = store._local_files
    assert direct is not None
    ids = store.index.row_ids(positions).tolist()
    through_lance = [data for _, data in store.lance_dataset.read_blobs("gop", ids=ids, preserve_order=True)]
    return direct.read(positions[::-1])[::-1], through_lance


def test_every_gop_reads_as_lance_reads_it_after_renditions_and_deletes(dataset_copy):
    add_rendition(dataset_copy, "88x72", cameras=["top"])  # new fragments
    delete_episodes(dataset_copy, [1])
    gops = lance.dataset(f"{dataset_copy}/gops.lance")
    gops.add_columns({"later": "ref_id * 2"})  # a column added later: a second data file per fragment
    assert {len(f.metadata.files) for f in lance.dataset(gops.uri).get_fragments()} == {2}
    direct, through_lance = _every_gop_both_ways(dataset_copy)
    assert len(direct) == len(through_lance) > 0
    assert direct == through_lance


def test_frames_read_the_same_through_either_path(dataset_copy, monkeypatch):
    rows = [0, 7, 150, 400]
    direct = robodata.open(dataset_copy).get_windows(rows, range(-3, 1))
    monkeypatch.setattr(LocalGopFiles, "of", classmethod(lambda cls, gops, row_ids: None))
    through_lance = robodata.open(dataset_copy)
    assert gop_store(through_lance)._local_files is None
    windows = through_lance.get_windows(rows, range(-3, 1))
    for camera in through_lance.cameras:
        np.testing.assert_array_equal(direct.data[camera], windows.data[camera])


def _blob_table(path: str, inline_threshold: int) -> lance.LanceDataset:
    field = lance.blob_field("gop")
    metadata = {**(field.metadata or {}), b"lance-encoding:blob-inline-size-threshold": str(inline_threshold).encode()}
    schema = pa.schema([pa.field("ref_id", pa.int64()), field.with_metadata(metadata)])
    values = [bytes([k]) * (100 + k) for k in range(5)]
    table = pa.table({"ref_id": pa.array(range(5), pa.int64()), "gop": lance.blob_array(values)}, schema=schema)
    return lance.write_dataset(table, path, data_storage_version="2.2", enable_stable_row_ids=True)


def _second_fragment(gops: lance.LanceDataset) -> lance.LanceDataset:
    values = [bytes([k]) * (100 + k) for k in range(5, 8)]
    more = pa.table({"ref_id": pa.array(range(5, 8), pa.int64()), "gop": lance.blob_array(values)}, schema=gops.schema)
    return lance.write_dataset(more, gops.uri, mode="append")


def _row_ids(gops: lance.LanceDataset) -> np.ndarray:
    return gops.to_table(columns=["ref_id"], with_row_id=True)["_rowid"].to_numpy()


def test_inline_blobs_are_read_in_place(tmp_path):
    gops = _blob_table(str(tmp_path / "inline.lance"), inline_threshold=1 << 20)
    files = LocalGopFiles.of(gops, _row_ids(gops))
    assert files is not None
    assert files.read(np.array([4, 0, 2])) == [b"\x04" * 104, b"\x00" * 100, b"\x02" * 102]


def test_blobs_outside_the_data_file_are_left_to_lance(tmp_path):
    gops = _blob_table(str(tmp_path / "packed.lance"), inline_threshold=10)
    kinds = gops.to_table(columns=["gop"])["gop"].combine_chunks().field("kind").to_numpy()
    assert (kinds != 0).all()  # packed in a sidecar: not where a data file's descriptor points
    assert LocalGopFiles.of(gops, _row_ids(gops)) is None


def test_each_data_file_is_checked_before_its_bytes_are_trusted(tmp_path, monkeypatch):
    gops = _blob_table(str(tmp_path / "inline.lance"), inline_threshold=1 << 20)
    gops = _second_fragment(gops)
    drift_descriptors(monkeypatch, fragment=1)  # Lance's descriptors of the second file point elsewhere
    files = LocalGopFiles.of(gops, _row_ids(gops))
    assert files is not None
    assert files.read(np.array([1, 0])) == [b"\x01" * 101, b"\x00" * 100]  # the first file: checked, right
    with pytest.raises(LayoutDriftError, match=r"GOP row \d+ read in place from .* differs from Lance's read_blobs"):
        files.read(np.array([6]))
    assert files.checked_files == 1


def test_the_off_switch_reads_every_gop_through_lance(tmp_path, monkeypatch):
    gops = _blob_table(str(tmp_path / "inline.lance"), inline_threshold=1 << 20)
    monkeypatch.setenv(OFF_SWITCH, "1")
    assert LocalGopFiles.of(gops, _row_ids(gops)) is None
    monkeypatch.setenv(OFF_SWITCH, "0")
    assert LocalGopFiles.of(gops, _row_ids(gops)) is not None


def test_rows_the_scan_does_not_see_are_left_to_lance(tmp_path):
    gops = _blob_table(str(tmp_path / "inline.lance"), inline_threshold=1 << 20)
    assert LocalGopFiles.of(gops, np.append(_row_ids(gops), 999)) is None


def drift_descriptors(monkeypatch, fragment: int, only_row_id: int | None = None, shift: int = 7) -> None:
    """Make the blob descriptors Lance's scans return point ``shift`` bytes past where the GOPs of
    ``fragment`` (or only its row ``only_row_id``) are: the layout drift a Lance release could bring."""
    scan = lance.LanceDataset.to_table

    def drifted(self, *args, **kwargs):
        table = scan(self, *args, **kwargs)
        if kwargs.get("columns") != ["gop"] or "_rowaddr" not in table.column_names:
            return table
        described = table["gop"].combine_chunks()
        hit = (table["_rowaddr"].to_numpy() >> 32) == fragment
        if only_row_id is not None:
            hit &= table["_rowid"].to_numpy() == only_row_id
        positions = described.field("position").to_numpy().copy()
        positions[hit] += shift
        fields = [described.type.field(i) for i in range(described.type.num_fields)]
        arrays = [pa.array(positions, f.type) if f.name == "position" else described.field(f.name) for f in fields]
        column = pa.StructArray.from_arrays(arrays, fields=fields)
        return table.set_column(table.column_names.index("gop"), table.schema.field("gop"), column)

    monkeypatch.setattr(lance.LanceDataset, "to_table", drifted)
