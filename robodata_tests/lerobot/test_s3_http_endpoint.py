"""An s3:// dataset behind an http:// endpoint given only by the documented AWS_* variables
(moto's server): LeRobotCompatDataset, robodata-train's dataset construction and a DataLoader
worker read it without ``AWS_ALLOW_HTTP`` (Lance's object store refuses plain http unless told;
robodata tells it whenever the endpoint is http://)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import robodata

torch = pytest.importorskip("torch")

from robodata.lerobot import LeRobotCompatDataset  # noqa: E402
from robodata.lerobot import train as robodata_train  # noqa: E402
from robodata.torch import worker_context  # noqa: E402


@pytest.fixture
def http_only_environment(s3, monkeypatch):
    """The environment a user sets for an S3-compatible server: AWS_* and nothing else."""
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in s3.environ.items():
        monkeypatch.setenv(name, value)
    assert s3.environ["AWS_ENDPOINT_URL"].startswith("http://") and "AWS_ALLOW_HTTP" not in os.environ


@pytest.mark.slow  # a spawned DataLoader worker
def test_an_http_endpoint_from_the_environment_needs_no_allow_http(
    s3, s3_root, eight_short_uploads, http_only_environment
):
    root = f"{s3_root}/ds"
    robodata.ingest_episode(str(eight_short_uploads[0]), root, storage_options=s3.storage_options)
    stored = robodata.open(root, storage_options=s3.storage_options)  # the options given in full
    camera = stored.cameras[0]
    expected = stored.get_frames([0, 7], cameras=camera)[f"observation_images_{camera}"]
    ds = LeRobotCompatDataset(root, return_uint8=True)
    assert (ds.version, len(ds)) == (stored.version, len(stored))
    key = f"observation.images.{camera}"
    assert np.array_equal(ds[7][key].permute(1, 2, 0).numpy(), expected[1])

    # robodata-train's construction (LeRobot's factory, as lerobot-train calls it), then a
    # DataLoader worker of its own process reading through Lance with the same environment.
    make = robodata_train.dataset_factory(lambda *args, **kwargs: pytest.fail("LeRobot's class was called"))
    trained = make(root, root=None, episodes=None, revision=str(stored.version), return_uint8=True)
    assert isinstance(trained, LeRobotCompatDataset) and trained.version == stored.version
    loader = torch.utils.data.DataLoader(trained, batch_size=8, num_workers=1, multiprocessing_context=worker_context())
    batch = next(iter(loader))
    assert np.array_equal(batch[key][[0, 7]].permute(0, 2, 3, 1).numpy(), expected)
