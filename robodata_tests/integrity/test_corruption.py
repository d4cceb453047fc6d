"""Bytes flipped inside a stored GOP on disk: every read path that returns frames (or GOP bytes)
raises CorruptGopError naming the dataset version, episode, camera and GOP; nothing returns
wrong frames. Other GOPs still read."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

import robodata
from robodata.errors import CorruptGopError, RoboDataError
from robodata.reader._dataset import gop_store
from robodata.torch._batch_reader import BatchReader
from robodata.torch._loader import TrainingLoader

TOP = "observation_images_top"


def flip_gop_bytes(root: str, gop: bytes, at: float = 0.5) -> Path:
    """Flip one byte inside ``gop``'s stored copy in gops.lance's data files (as a failing disk
    or a bad copy would); returns the file changed."""
    for path in (Path(root) / "gops.lance" / "data").rglob("*"):
        if not path.is_file():
            continue
        content = bytearray(path.read_bytes())
        start = content.find(gop)
        if start >= 0:
            content[start + int(len(gop) * at)] ^= 0x5A
            path.write_bytes(bytes(content))
            return path
    raise AssertionError("the GOP's bytes were not found in gops.lance's data files")


@pytest.fixture
def corrupted(dataset_copy):
    """dataset_copy with one byte flipped in GOP 2 of episode 1's top camera; returns
    (root, a row that reads from that GOP, a row that does not, its frame, version)."""
    ds = robodata.open(dataset_copy)
    rows = ds.to_table(columns=["episode_index", "observation_images_top_gop_index"])
    episode = rows["episode_index"].to_numpy()
    gop_index = rows["observation_images_top_gop_index"].to_numpy()
    bad_row = int(np.flatnonzero((episode == 1) & (gop_index == 2))[0])
    good_row = int(np.flatnonzero((episode == 0) & (gop_index == 0))[0])
    [ref] = gop_store(ds).refs([bad_row], TOP)
    good_frame = ds.get_frames([good_row], cameras=TOP)[TOP]
    flip_gop_bytes(dataset_copy, gop_store(ds).read([ref])[int(ref)])
    return dataset_copy, bad_row, good_row, good_frame, ds.version


def _assert_names_the_gop(error: pytest.ExceptionInfo, root: str, version: int) -> None:
    message = str(error.value)
    assert f"{root} version {version}: GOP 2 of episode 1, camera 'top'" in message
    assert "is corrupt: xxh3_64 of its bytes is" in message


def test_every_read_path_detects_a_flipped_byte(corrupted):
    root, bad, good, good_frame, version = corrupted
    ds = robodata.open(root)
    attempts = {
        "ds[i]": lambda: ds[bad],
        "get_frames": lambda: ds.get_frames([good, bad]),
        "get_frames, 1 thread": lambda: ds.get_frames([bad], cameras=TOP, concurrency=1),
        "get_windows": lambda: ds.get_windows([bad], [-2, 0], cameras=TOP),
        "gop_store(ds).read": lambda: gop_store(ds).read(gop_store(ds).refs([bad], TOP)),
        "bytes supplied by the caller": lambda: ds.get_frames(
            [bad],
            cameras=TOP,
            gop_bytes={int(r): b"x" * int(gop_store(ds).byte_sizes([r])[0]) for r in gop_store(ds).refs([bad], TOP)},
        ),
        "BatchReader without cache": lambda: BatchReader(root, cameras=["top"], budget_bytes=0).read([bad]),
        "BatchReader, prefetched": lambda: _prefetched_read(root, bad),
        "BatchReader windows": lambda: BatchReader(root, cameras=["top"], offsets={"top": [-1, 0]}).read([bad]),
        "TrainingLoader": lambda: list(TrainingLoader.create(root, batch_size=len(ds), cameras=["top"])),
    }
    detected = []
    for name, attempt in attempts.items():
        with pytest.raises(CorruptGopError) as error:
            attempt()
        _assert_names_the_gop(error, root, version)
        assert isinstance(error.value, RoboDataError)
        assert (error.value.episode_index, error.value.camera, error.value.gop_index) == (1, "top", 2)
        detected.append(name)
    assert len(detected) == len(attempts)
    # GOPs that were not touched still read, exactly as before.
    np.testing.assert_array_equal(ds.get_frames([good], cameras=TOP)[TOP], good_frame)


def _prefetched_read(root: str, bad: int):
    reader = BatchReader(root, cameras=["top"], prefetch_batches=2)
    batches = [np.array([0, 1]), np.array([bad])]
    reader.schedule(batches)
    try:
        for batch in batches:
            reader.read(batch)
    finally:
        reader.close()


def test_the_error_survives_pickling_and_names_the_gop():
    error = CorruptGopError.of("s3://b/ds", 4, 1, "top", 2, 99, "checksum differs")
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error)
    assert (copy.episode_index, copy.camera, copy.gop_index, copy.version) == (1, "top", 2, 4)
    assert str(CorruptGopError("message only")) == "message only"  # how DataLoader re-raises it


@pytest.mark.parametrize("at", [0.0, 0.3, 0.99])
def test_a_flip_anywhere_in_the_gop_is_detected(dataset_copy, at):
    ds = robodata.open(dataset_copy)
    refs = gop_store(ds).refs(range(len(ds)), TOP)
    ref = int(refs[len(refs) // 2])
    flip_gop_bytes(dataset_copy, gop_store(ds).read([ref])[ref], at=at)
    with pytest.raises(CorruptGopError):
        gop_store(robodata.open(dataset_copy)).read([ref])


def test_a_dataloader_worker_reports_the_corrupt_gop(corrupted):
    from robodata.torch._torch_dataset import make_dataloader

    root, bad, _, _, version = corrupted
    loader = make_dataloader(
        root, batch_size=64, num_workers=1, cameras=["top"], shuffle="none", persistent_workers=False
    )
    with pytest.raises(CorruptGopError) as error:
        list(loader)
    assert f"{root} version {version}: GOP 2 of episode 1, camera 'top'" in str(error.value)
