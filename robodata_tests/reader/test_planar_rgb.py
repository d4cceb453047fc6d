"""Frames decoded channels first (``pixel_format="rgbp"``, what LeRobotCompatDataset and
the loaders' ``pixel_format="rgbp"`` read): exactly the RGB pixels, laid out [3, H, W]."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.torch._batch_reader import BatchReader

TOP = "observation_images_top"


def test_planar_rgb_is_rgb24_channels_first(ingested):
    ds = robodata.open(ingested)
    rows = [0, 3, 50, 101, 3, len(ds) - 1]  # a repeat too
    rgb = ds.get_frames(rows).data
    planar = ds.get_frames(rows, pixel_format="rgbp").data
    for camera in ds.cameras:
        assert planar[camera].shape == (len(rows), 3, *rgb[camera].shape[1:3])
        np.testing.assert_array_equal(planar[camera], rgb[camera].transpose(0, 3, 1, 2))
    # Channels swapped (swscale's gbrp is G, B, R) would differ: the footage is not grey.
    assert not np.array_equal(planar["top"][:, 0], planar["top"][:, 1])


def test_planar_rgb_scaled_on_decode_and_from_a_rendition(dataset_copy):
    from robodata.ingest._renditions import add_rendition

    ds = robodata.open(dataset_copy)
    rows = [1, 2, 80]
    scaled = ds.get_frames(rows, cameras="top", resolution=(96, 128), pixel_format="rgbp")["top"]
    np.testing.assert_array_equal(
        scaled, ds.get_frames(rows, cameras="top", resolution=(96, 128))["top"].transpose(0, 3, 1, 2)
    )
    add_rendition(dataset_copy, "224x224", cameras=["top"])
    ds = robodata.open(dataset_copy)
    planar = ds.get_frames(rows, cameras="top", resolution=(224, 224), pixel_format="rgbp")["top"]
    rgb = ds.get_frames(rows, cameras="top", resolution=(224, 224))["top"]
    np.testing.assert_array_equal(planar, rgb.transpose(0, 3, 1, 2))


@pytest.mark.parametrize("image_dtype", ["uint8", "float32"])
def test_channels_first_batches_match_packed_ones(ingested, image_dtype):
    rows = [4, 9, 60]
    packed = BatchReader(ingested, cameras=["top"], budget_bytes=0, image_dtype=image_dtype).read(rows)[TOP]
    first = BatchReader(ingested, cameras=["top"], budget_bytes=0, image_dtype=image_dtype, pixel_format="rgbp").read(
        rows
    )[TOP]
    assert first.shape == (3, 3, 480, 640) and first.flags.c_contiguous and first.dtype == packed.dtype
    np.testing.assert_array_equal(first, np.moveaxis(packed, -1, -3))
