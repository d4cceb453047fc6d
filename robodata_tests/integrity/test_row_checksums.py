"""Row data is vouched for too: a flipped byte anywhere in a frames.lance data file (row values,
label column files, Lance's page metadata) is reported by ``verify``, naming the table, the
fragment and the file; opening a dataset reads no row data, so it refuses only a data file whose
size differs from its recorded size (truncated, extended, missing); checksums follow annotate,
compaction and delete; a dataset without them opens and is upgraded by ``add-checksums``."""

from __future__ import annotations

import random
import shutil
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import robodata
from robodata.edits.upkeep import upkeep_dataset
from robodata.format.tables import frames_uri, open_table
from robodata.integrity.frames_checksums import (
    CHECKSUM_DIR,
    check_frames_files,
    check_frames_sizes,
    record_frames_checksums,
)
from robodata.integrity.verify import verify_dataset

POSITIONS_PER_FILE = 40  # of the positions every 97th byte, a seeded sample
VERIFY_EVERY = 3  # verify (which also checksums every GOP) at every third position


def _labelled(root: str) -> str:
    labels = pa.table({"episode_index": [0, 1], "frame_index": [2, 3], "success": [True, False]})
    robodata.add_annotations(root, labels)  # a label column file of its own
    return root


def _data_files(root: str) -> list[Path]:
    return sorted((Path(frames_uri(root)) / "data").iterdir())


def test_a_flipped_byte_in_any_frames_data_file_is_found_by_verify(dataset_copy):
    root = _labelled(dataset_copy)
    rng = random.Random(223)
    files = _data_files(root)
    assert len(files) >= 2
    checked = 0
    for path in files:
        data = bytearray(path.read_bytes())
        positions = list(range(0, len(data), 97))
        for n, position in enumerate(sorted(rng.sample(positions, min(POSITIONS_PER_FILE, len(positions))))):
            flipped = bytearray(data)
            flipped[position] ^= 0xFF
            path.write_bytes(flipped)
            try:
                check = check_frames_files(root, open_table(frames_uri(root)))
                assert len(check.problems) == 1, check.problems
                message = check.problems[0]
                assert "frames.lance: fragment " in message and f"data file data/{path.name}" in message, message
                assert "is corrupt: xxh3_64 of its bytes is " in message and "\n" not in message
                # A read checks sizes only: the same size passes there.
                assert check_frames_sizes(root, open_table(frames_uri(root))).problems == []
                if n % VERIFY_EVERY == 0:
                    report = verify_dataset(root)
                    assert not report.ok
                    assert any(f"data/{path.name}" in p and "is corrupt" in p for p in report.problems)
            finally:
                path.write_bytes(data)
            checked += 1
    print(f"{checked} byte flips in {len(files)} frames.lance data files, all found by verify")
    assert verify_dataset(root).ok


def test_checksums_follow_annotate_compaction_and_delete(dataset_copy):
    root = _labelled(dataset_copy)
    robodata.delete_episodes(root, [1])
    upkeep_dataset(root, older_than=timedelta(days=1), gc_min_age=timedelta(0))
    robodata.add_annotations(root, pa.table({"episode_index": [2], "frame_index": [0], "grasp": [1]}))
    check = check_frames_files(root, open_table(frames_uri(root)))
    assert check.problems == [] and check.unrecorded == [] and check.checked >= 2
    assert len(robodata.open(root)) > 0


def test_a_dataset_without_row_checksums_opens_and_is_upgraded(dataset_copy):
    root = dataset_copy
    shutil.rmtree(Path(root) / CHECKSUM_DIR)
    assert len(robodata.open(root)) > 0
    report = verify_dataset(root)
    assert report.ok and any("have no recorded checksum" in note for note in report.notes)
    assert record_frames_checksums(root) == len(_data_files(root))
    assert record_frames_checksums(root) == 0
    assert verify_dataset(root).notes == []
    path = _data_files(root)[0]
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(robodata.CorruptRowsError, match=f"data/{path.name}"):
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
    with pytest.raises(robodata.CorruptRowsError) as raised:
        robodata.open(root)
    message = str(raised.value)
    assert "frames.lance: fragment " in message and f"data file data/{path.name}" in message, message
    expected = (
        "the file is missing"
        if damage == "missing"
        else f"{len(data) + (-7 if damage == 'truncated' else 7)} bytes, recorded {len(data)}"
    )
    assert f"is corrupt: {expected}" in message and "\n" not in message
    report = verify_dataset(root)
    assert any(f"data/{path.name}" in p for p in report.problems)
