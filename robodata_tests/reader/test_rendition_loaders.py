"""The torch datasets read a training rendition when asked for its size: make_dataloader (in the
training process and in a spawned worker), RoboTorchDataset and LeRobotCompatDataset."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.ingest._renditions import add_rendition

torch = pytest.importorskip("torch")
from robodata.lerobot import LeRobotCompatDataset  # noqa: E402
from robodata.torch._torch_dataset import make_dataloader  # noqa: E402

TOP = "observation_images_top"


@pytest.fixture
def with_rendition(dataset_copy) -> str:
    add_rendition(dataset_copy, "224x224", cameras=["top", "wrist_left"])
    return dataset_copy


@pytest.mark.slow  # spawns a DataLoader worker
def test_make_dataloader_returns_the_rendition_shape(with_rendition):
    expected = robodata.open(with_rendition).get_frames
    for workers in (0, 1):
        loader = make_dataloader(
            with_rendition,
            batch_size=8,
            num_workers=workers,
            cameras=["top", "wrist_left"],
            pixel_format="rgbp",
            resolution=(224, 224),
            seed=3,
        )
        batch = next(iter(loader))
        assert batch[TOP].shape == (8, 3, 224, 224) and batch[TOP].dtype == torch.uint8
        assert batch["observation_images_wrist_left"].shape == (8, 3, 224, 224)
        rows = batch["index"].numpy()
        want = expected(rows, cameras="top", resolution=(224, 224))["top"]
        np.testing.assert_array_equal(batch[TOP].permute(0, 2, 3, 1).numpy(), want)


def test_lerobot_compat_dataset_returns_the_rendition_shape(with_rendition):
    ds = LeRobotCompatDataset(with_rendition, resolution=(224, 224), return_uint8=True)
    item = ds[5]
    assert item["observation.images.top"].shape == (3, 224, 224)
    assert tuple(ds.meta.features["observation.images.top"]["shape"]) == (224, 224, 3)
    # A camera without the rendition is scaled from its full frames to the same size.
    assert item["observation.images.wrist_right"].shape == (3, 224, 224)
    plain = LeRobotCompatDataset(with_rendition, return_uint8=True)
    assert plain[5]["observation.images.top"].shape == (3, 480, 640)
