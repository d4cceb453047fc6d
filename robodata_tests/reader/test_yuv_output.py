"""Frames handed over as YUV 4:2:0 and converted to RGB in torch: the same pictures as PyAV's
RGB conversion (within swscale's rounding), at half the bytes."""

from __future__ import annotations

import numpy as np
import pytest

import robodata

torch = pytest.importorskip("torch")
from robodata.torch._torch_dataset import make_dataloader  # noqa: E402
from robodata.torch._yuv import yuv420_to_rgb  # noqa: E402

TOP = "observation_images_top"


def test_yuv420_frames_convert_to_pyav_rgb(ingested):
    ds = robodata.open(ingested)
    rows = [0, 3, 50, 101, len(ds) - 1]
    rgb = ds.get_frames(rows).data
    yuv = ds.get_frames(rows, pixel_format="yuv420p").data
    for column in ds.cameras:
        n, h, w, _ = rgb[column].shape
        assert yuv[column].shape == (n, h * 3 // 2, w) and yuv[column].nbytes * 2 == rgb[column].nbytes
        converted = yuv420_to_rgb(torch.from_numpy(yuv[column]), dtype=torch.uint8)
        assert converted.shape == (n, 3, h, w)
        diff = np.abs(converted.permute(0, 2, 3, 1).numpy().astype(np.int16) - rgb[column].astype(np.int16))
        assert diff.max() <= 3 and diff.mean() < 1.5
        as_float = yuv420_to_rgb(torch.from_numpy(yuv[column]))
        assert as_float.dtype == torch.float32
        torch.testing.assert_close(as_float, converted.float() / 255, atol=1 / 255, rtol=0)
    # Shifting the chroma planes by one frame is caught: the tolerance tells pictures apart.
    wrong = yuv420_to_rgb(torch.from_numpy(np.roll(yuv["top"], 1, axis=0)), dtype=torch.uint8)
    assert np.abs(wrong.permute(0, 2, 3, 1).numpy().astype(np.int16) - rgb["top"].astype(np.int16)).mean() > 5


def test_yuv420_at_a_rendition_size_and_through_the_loader(dataset_copy):
    from robodata.ingest._renditions import add_rendition

    add_rendition(dataset_copy, "224x224", cameras=["top"])
    ds = robodata.open(dataset_copy)
    rows = [1, 2, 80]
    yuv = ds.get_frames(rows, cameras="top", resolution=(224, 224), pixel_format="yuv420p")["top"]
    rgb = ds.get_frames(rows, cameras="top", resolution=(224, 224))["top"]
    assert yuv.shape == (3, 336, 224)
    diff = yuv420_to_rgb(torch.from_numpy(yuv), dtype=torch.uint8).permute(0, 2, 3, 1).numpy().astype(int) - rgb
    assert np.abs(diff).max() <= 3
    loader = make_dataloader(dataset_copy, batch_size=4, num_workers=0, cameras=["top"], pixel_format="yuv420p")
    batch = next(iter(loader))
    assert batch[TOP].shape == (4, 720, 640) and batch[TOP].dtype == torch.uint8
    with pytest.raises(ValueError, match="yuv420_to_rgb"):
        make_dataloader(dataset_copy, batch_size=4, pixel_format="yuv420p", image_dtype="float32")
    with pytest.raises(ValueError, match="even H and W"):
        yuv420_to_rgb(torch.zeros(5, 4, dtype=torch.uint8))
