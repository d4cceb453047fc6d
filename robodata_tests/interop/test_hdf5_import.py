"""ALOHA / ACT HDF5 -> robodata, with fixtures written here by h5py the way ALOHA writes them:
raw uint8 images, and JPEG bytes per step zero-padded with /compress_len (OpenCV's BGR order)."""

from __future__ import annotations

import io
from pathlib import Path

import h5py
import numpy as np
import pytest
from PIL import Image

import robodata
from robodata.codec._quality import psnr
from robodata.errors import BadUploadError
from robodata.interop._hdf5_import import import_hdf5
from robodata.sample_data import ALOHA_JOINTS

STEPS, WIDTH, HEIGHT = 24, 96, 64
CAMERAS = ["cam_high", "cam_left_wrist"]
# H.264 at crf 23 on these smooth test images; the JPEG case is compared against the JPEG-decoded
# frame ALOHA's own loader would see. Measured minimums: 38.6 dB raw, 37.4 dB JPEG; the same frames
# with channels swapped score about 10 dB.
CODEC_PSNR_DB = 35.0


def _frames(seed: int) -> np.ndarray:
    """Colourful moving scenes (a soft blob over a gradient): a channel swap or a wrong frame
    would cost tens of dB."""
    colour = np.random.default_rng(seed).integers(0, 256, 3)
    yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float64)
    background = np.stack([xx * 255 / WIDTH, yy * 255 / HEIGHT, np.full_like(xx, 40.0)], axis=-1)
    frames = np.empty((STEPS, HEIGHT, WIDTH, 3), dtype=np.uint8)
    for t in range(STEPS):
        blob = np.exp(-((xx - 12 - 3 * t) ** 2 + (yy - 32) ** 2) / (2 * 8.0**2))[..., None]
        frames[t] = np.round(background * (1 - blob) + colour * blob).astype(np.uint8)
    return frames


def _bgr_jpeg(rgb: np.ndarray) -> bytes:
    """What cv2.imencode('.jpg', rgb) produces: OpenCV takes the array's channels as B, G, R."""
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb[..., ::-1])).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def _write_episode(path: Path, seed: int, compress: bool) -> dict:
    rng = np.random.default_rng(seed)
    qpos = rng.standard_normal((STEPS, 14))  # float64, as ALOHA's recorder stores it
    signals = {
        "qpos": qpos,
        "qvel": rng.standard_normal((STEPS, 14)),
        "effort": rng.standard_normal((STEPS, 14)),
        "action": qpos + 0.01 * rng.standard_normal((STEPS, 14)),
    }
    images = {camera: _frames(seed + k) for k, camera in enumerate(CAMERAS)}
    with h5py.File(path, "w") as root:
        root.attrs["sim"] = not compress
        root.attrs["compress"] = compress
        obs = root.create_group("observations")
        for name in ("qpos", "qvel", "effort"):
            obs.create_dataset(name, data=signals[name])
        root.create_dataset("action", data=signals["action"])
        group = obs.create_group("images")
        if not compress:
            for camera in CAMERAS:
                group.create_dataset(camera, data=images[camera], chunks=(1, HEIGHT, WIDTH, 3))
        else:
            encoded = {c: [_bgr_jpeg(f) for f in images[c]] for c in CAMERAS}
            padded = max(len(b) for c in CAMERAS for b in encoded[c])
            for camera in CAMERAS:
                array = np.zeros((STEPS, padded), dtype=np.uint8)
                for t, data in enumerate(encoded[camera]):
                    array[t, : len(data)] = np.frombuffer(data, dtype=np.uint8)
                group.create_dataset(camera, data=array, chunks=(1, padded))
            root.create_dataset("compress_len", data=[[len(b) for b in encoded[c]] for c in CAMERAS])
    return {"images": images, **signals}


@pytest.fixture
def recordings(tmp_path) -> tuple[Path, list[dict]]:
    folder = tmp_path / "aloha"
    folder.mkdir()
    return folder, [
        _write_episode(folder / "episode_0.hdf5", 0, compress=False),
        _write_episode(folder / "episode_1.hdf5", 10, compress=True),
    ]


def _episode_rows(ds, episode: int) -> np.ndarray:
    table = ds.to_table(columns=["episode_index", "frame_index"])
    rows = np.flatnonzero(table["episode_index"].to_numpy() == episode)
    return rows[np.argsort(table["frame_index"].to_numpy()[rows])]


def test_both_image_encodings_import_exactly(recordings, tmp_path):
    folder, written = recordings
    target = str(tmp_path / "ds")
    result = import_hdf5(str(folder / "episode_*.hdf5"), target, task="insertion", progress=False)
    assert result.imported == [0, 1] and result.rows == 2 * STEPS
    ds = robodata.open(target)
    assert ds.metadata.control_hz == 50.0 and ds.metadata.joint_names == ALOHA_JOINTS
    assert {c: (i.width, i.height, i.fps) for c, i in ds.metadata.cameras.items()} == {
        c: (WIDTH, HEIGHT, 50.0) for c in CAMERAS
    }
    assert ds.metadata.extra["imported_from"] == {
        "format": "aloha_hdf5", "control_hz": 50.0, "sim": True, "compress": False
    }  # fmt: skip
    for episode, source in enumerate(written):
        rows = _episode_rows(ds, episode)
        table = ds.to_table(columns=["timestamp_ns", "observation_state", "action", "observation_qvel", "task"])
        table = table.take(rows)

        def matrix(name, table=table):
            return np.stack(table[name].to_numpy(zero_copy_only=False))

        np.testing.assert_array_equal(matrix("observation_state"), source["qpos"].astype(np.float32))
        np.testing.assert_array_equal(matrix("action"), source["action"].astype(np.float32))
        np.testing.assert_array_equal(matrix("observation_qvel"), source["qvel"].astype(np.float32))
        assert table["timestamp_ns"].to_pylist() == [t * 20_000_000 for t in range(STEPS)]
        assert set(table["task"].to_pylist()) == {"insertion"}
        for camera in CAMERAS:
            column = f"observation_images_{camera}"
            got = ds.get_frames(rows, cameras=column)[column]
            original = source["images"][camera]
            if episode == 0:  # raw: only the H.264 re-encode stands between file and dataset
                want = original
            else:  # JPEG: the frames ALOHA's cv2.imdecode returns
                want = [np.asarray(Image.open(io.BytesIO(_bgr_jpeg(f))))[..., ::-1] for f in original]
            assert min(psnr(w, g) for w, g in zip(want, got, strict=True)) > CODEC_PSNR_DB, (episode, camera)
            assert min(psnr(o, g) for o, g in zip(original, got, strict=True)) > 30.0  # channels in order

    again = import_hdf5(str(folder / "episode_*.hdf5"), target, progress=False)
    assert again.imported == [] and again.skipped == [0, 1]
    shifted = import_hdf5(str(folder / "episode_*.hdf5"), target, episodes=[1], start_index=100, progress=False)
    assert shifted.imported == [101] and shifted.skipped == []


def test_a_bad_file_is_named_and_nothing_is_written(recordings, tmp_path):
    folder, _ = recordings
    bad = folder / "episode_2.hdf5"
    with h5py.File(bad, "w") as root:
        root.create_dataset("observations/qpos", data=np.zeros((STEPS, 14)))
        root.create_dataset("observations/images/cam_high", data=np.zeros((STEPS, HEIGHT, WIDTH, 3), np.uint8))
    with pytest.raises(BadUploadError, match=rf"{bad}: has no /action dataset"):
        import_hdf5(str(folder / "episode_*.hdf5"), str(tmp_path / "ds"), progress=False)
    assert not (tmp_path / "ds").exists()
    with pytest.raises(BadUploadError, match=r"episode_\*\.hdf5: has no episodes \[7\]"):
        import_hdf5(str(folder / "episode_*.hdf5"), str(tmp_path / "ds"), episodes=[7], progress=False)
    with pytest.raises(FileNotFoundError, match="matches no HDF5 files"):
        import_hdf5(str(folder / "nothing_*.hdf5"), str(tmp_path / "ds"), progress=False)
    with pytest.raises(BadUploadError, match="has 14 joints but 2 joint names"):
        import_hdf5(str(folder / "episode_0.hdf5"), str(tmp_path / "ds"), joint_names=["a", "b"], progress=False)


def _write_cameras_in_order(path: Path, cameras: list[str], track_order: bool) -> None:
    with h5py.File(path, "w") as root:
        root.create_dataset("observations/qpos", data=np.zeros((STEPS, 14)))
        root.create_dataset("action", data=np.zeros((STEPS, 14)))
        group = root["observations"].create_group("images", track_order=track_order)
        for k, camera in enumerate(cameras):
            group.create_dataset(camera, data=_frames(k))


def test_cameras_keep_the_files_order_when_it_records_one(tmp_path):
    """A group that tracks creation order lists its cameras as written; ALOHA's recorder does not
    track it, and HDF5 then lists them by name: the only order such a file holds."""
    recorded = ["cam_low", "cam_high", "cam_left_wrist"]
    _write_cameras_in_order(tmp_path / "tracked.hdf5", recorded, track_order=True)
    _write_cameras_in_order(tmp_path / "untracked.hdf5", recorded, track_order=False)
    import_hdf5(str(tmp_path / "tracked.hdf5"), str(tmp_path / "tracked"), progress=False)
    import_hdf5(str(tmp_path / "untracked.hdf5"), str(tmp_path / "untracked"), progress=False)
    assert robodata.open(str(tmp_path / "tracked")).cameras == recorded
    assert robodata.open(str(tmp_path / "untracked")).cameras == ["cam_high", "cam_left_wrist", "cam_low"]
