"""Row data is vouched for too: a flipped byte anywhere in a frames.lance data file (row values,
label column files, Lance's page metadata) is refused by the first read of rows in a process and
reported by ``verify``, naming the table, the fragment, its rows and the file; opening a dataset
reads no row data, so it refuses only a data file whose size differs from its recorded size
(truncated, extended, missing); each file's bytes are checked once per process; checksums follow
annotate, compaction and delete; data files a writer left unrecorded open, and the next write
records them."""

from __future__ import annotations

import random
import shutil
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import robodata
import robodata.integrity._frames_checksums as frames_checksums
from robodata.edits._upkeep import upkeep_dataset
from robodata.format._tables import frames_uri, open_table
from robodata.integrity._frames_checksums import (
    CHECKSUM_DIR,
    check_frames_files,
    check_frames_sizes,
    file_checksum,
    record_frames_checksums,
)
from robodata.integrity._frames_checksums import (
    _data_files as manifest_files,
)
from robodata.integrity._verify import verify_dataset
from robodata.reader._dataset import adopt_rows, share_rows

POSITIONS_PER_FILE = 40  # of the positions every 97th byte, a seeded sample
VERIFY_EVERY = 3  # verify (which also checksums every GOP) at every third position


def _labelled(root: str) -> str:
    labels = pa.table({"episode_index": [0, 1], "frame_index": [2, 3], "success": [True, False]})
    robodata.add_annotations(root, labels)  # a label column file of its own
    return root


def _data_files(root: str) -> list[Path]:
    return sorted((Path(frames_uri(root)) / "data").iterdir())


# The reads that serve rows, each the first of a fresh process (the per-process check cleared).
READS = {
    "row": lambda ds: ds[0],
    "to_table": lambda ds: ds.to_table(columns=["action"]),
    "episodes": lambda ds: ds.episodes(),
    "take_rows": lambda ds: ds.take_rows([1, 2], ["observation_state"]),
    "row index": lambda ds: len(ds),
}


def test_a_flipped_byte_in_any_frames_data_file_is_found_by_reads_and_verify(dataset_copy):
    root = _labelled(dataset_copy)
    rng = random.Random(223)
    files = _data_files(root)
    assert len(files) >= 2
    frames = open_table(frames_uri(root))
    described = {f.name: f for f in manifest_files(frames)}
    checked = 0
    for path in files:
        data = bytearray(path.read_bytes())
        positions = list(range(0, len(data), 97))
        for n, position in enumerate(sorted(rng.sample(positions, min(POSITIONS_PER_FILE, len(positions))))):
            flipped = bytearray(data)
            flipped[position] ^= 0xFF
            path.write_bytes(flipped)
            file = described[path.name]
            expected = (
                f"{frames_uri(root)}: fragment {file.fragment} (rows {file.first_row}-{file.first_row + file.rows - 1}; "
                f"data file data/{path.name}) is corrupt: xxh3_64 of its bytes is {file_checksum(bytes(flipped)):016x}, "
                f"recorded {file_checksum(bytes(data)):016x}"
            )
            try:
                check = check_frames_files(root, open_table(frames_uri(root)))
                assert check.problems == [expected]
                # Opening compares sizes only: the same size opens; the first read of rows refuses it.
                assert check_frames_sizes(root, open_table(frames_uri(root))).problems == []
                frames_checksums._checked.clear()
                ds = robodata.open(root)
                read = list(READS)[checked % len(READS)]
                with pytest.raises(robodata.errors.CorruptRowsError) as raised:
                    READS[read](ds)
                assert str(raised.value) == (
                    f"{expected}, version {ds.version}; re-ingest the episodes it holds or restore the file"
                ), read
                if n % VERIFY_EVERY == 0:
                    report = verify_dataset(root)
                    assert not report.ok
                    assert any(expected in p for p in report.problems)
            finally:
                path.write_bytes(data)
                frames_checksums._checked.clear()
            checked += 1
    print(f"{checked} byte flips in {len(files)} frames.lance data files, all refused by reads and verify")
    ds = robodata.open(root)
    assert all(READS[read](ds) is not None for read in READS)
    assert verify_dataset(root).ok


def test_each_data_file_is_checked_once_per_process_and_adopted_with_a_shared_row_index(monkeypatch, dataset_copy):
    root = _labelled(dataset_copy)
    real = frames_checksums._file_bytes
    read: list[str] = []
    monkeypatch.setattr(frames_checksums, "_file_bytes", lambda r, name, *a: read.append(name) or real(r, name, *a))
    frames_checksums._checked.clear()
    ds = robodata.open(root)
    assert read == []  # opening reads no row data
    for name in READS:
        READS[name](ds)
    robodata.open(root).to_table(columns=["action"])  # another object, same process
    assert sorted(read) == sorted(p.name for p in _data_files(root))
    shared = share_rows(ds)
    frames_checksums._checked.clear()  # as a DataLoader worker starts: nothing checked yet
    read.clear()
    worker = robodata.open(root)
    adopt_rows(worker, shared)
    worker.take_rows([0, 5], ["action"])
    assert read == []  # the process that shared its row index checked these files


def test_checksums_follow_annotate_compaction_and_delete(dataset_copy):
    root = _labelled(dataset_copy)
    robodata.delete_episodes(root, [1])
    upkeep_dataset(root, older_than=timedelta(days=1), gc_min_age=timedelta(0))
    robodata.add_annotations(root, pa.table({"episode_index": [2], "frame_index": [0], "grasp": [1]}))
    check = check_frames_files(root, open_table(frames_uri(root)))
    assert check.problems == [] and check.unrecorded == [] and check.checked >= 2
    assert len(robodata.open(root)) > 0


def test_data_files_left_unrecorded_open_and_the_next_write_records_them(dataset_copy):
    root = dataset_copy
    shutil.rmtree(Path(root) / CHECKSUM_DIR)  # as writers that stopped right after their commits leave it
    assert len(robodata.open(root)) > 0
    report = verify_dataset(root)
    n = len(_data_files(root))
    assert report.ok and report.notes == [
        f"frames.lance: {n} data files have no recorded checksum (a writer stopped after its commit); "
        "the next write to the dataset records them"
    ]
    robodata.add_annotations(root, pa.table({"episode_index": [0], "frame_index": [1], "success": [True]}))
    assert verify_dataset(root).notes == []
    assert record_frames_checksums(root) == 0
    path = _data_files(root)[0]
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(robodata.errors.CorruptRowsError, match=f"data/{path.name}"):
        robodata.open(root)


@pytest.mark.parametrize("damage", ["truncated", "extended", "missing"])
def test_a_data_file_of_another_size_is_refused_on_open(dataset_copy, damage):
    root = _labelled(dataset_copy)
    path = _data_files(root)[-1]
    data = path.read_bytes()
    if damage == "missing":
        path.unlink()
    else:
        path.write_bytes(data[:-7] if damage == "truncated" else data + b"\0" * 7)
    with pytest.raises(robodata.errors.CorruptRowsError) as raised:
        robodata.open(root)
    message = str(raised.value)
    assert "\n" not in message
    if damage == "missing":
        assert message.startswith(
            f"{frames_uri(root)}: data file {frames_uri(root)}/data/{path.name} is missing (deleted or never fully "
            "written): fragment "
        ), message
    else:
        assert "frames.lance: fragment " in message and f"data file data/{path.name}" in message, message
        assert f"is corrupt: {len(data) + (-7 if damage == 'truncated' else 7)} bytes, recorded {len(data)}" in message
    report = verify_dataset(root)
    assert any(f"data/{path.name}" in p for p in report.problems)
