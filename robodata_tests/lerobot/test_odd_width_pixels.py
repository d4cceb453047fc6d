"""LeRobotCompatDataset's images (read channels first, ``pixel_format="rgbp"``) at widths that are
not a multiple of swscale's 16-pixel blocks: 88 and 424 (a RealSense mode), where the last
columns once came back wrong (issue 41). They are the RGB frames robodata reads, channels first."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata import sample_data as _sample_data

torch = pytest.importorskip("torch")

from robodata.lerobot import LeRobotCompatDataset  # noqa: E402


@pytest.fixture(scope="module")
def odd_width_dataset(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("odd-width")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sample_data, "CAMERAS", {"top": (88, 72), "wrist_left": (424, 240)})
        [upload] = _sample_data.write_sample_uploads(folder / "uploads", episodes=1, seed=3, seconds=0.4)
    robodata.ingest_episode(str(upload), str(folder / "ds"))
    return str(folder / "ds")


def test_items_at_widths_88_and_424_are_the_rgb_frames_channels_first(odd_width_dataset):
    ds = robodata.open(odd_width_dataset)
    items = LeRobotCompatDataset(odd_width_dataset, return_uint8=True)
    rows = [0, 5, len(ds) - 1]
    rgb = ds.get_frames(rows).data
    for camera, width in [("top", 88), ("wrist_left", 424)]:
        assert rgb[camera].shape[2] == width
        for position, row in enumerate(rows):
            image = items[row][f"observation.images.{camera}"].numpy()
            np.testing.assert_array_equal(
                image, rgb[camera][position].transpose(2, 0, 1), err_msg=f"{camera} row {row}"
            )
