"""The training loader on an s3:// dataset (moto's S3 server): pinned, exact, exactly once."""

from __future__ import annotations

import numpy as np
import pytest

import robodata

# Without torch the module is skipped, not an error: the loader below needs it.
pytest.importorskip("torch")
from robodata.torch._torch_dataset import make_dataloader

WRIST = "observation_images_wrist_left"


def test_loader_reads_a_pinned_s3_version_exactly_once(s3, s3_root, eight_short_uploads):
    options = s3.storage_options
    root = f"{s3_root}/ds"
    for upload in eight_short_uploads[:2]:
        robodata.ingest_episode(str(upload), root, storage_options=options)
    pinned = robodata.open(root, storage_options=options)
    pinned.tag("run-s3")
    loader = make_dataloader(
        root,
        version="run-s3",
        storage_options=options,
        batch_size=16,
        seed=3,
        cameras=["wrist_left"],
        columns=["episode_index"],
        budget_bytes=1 << 20,
    )
    robodata.ingest_episode(str(eight_short_uploads[2]), root, storage_options=options)
    assert len(robodata.open(root, storage_options=options)) > len(pinned)

    assert loader.dataset_version == pinned.version
    visited = []
    for batch in loader:
        indices = batch["index"].numpy()
        assert np.array_equal(batch[WRIST].numpy(), pinned.get_frames(indices, cameras=WRIST)[WRIST])
        assert set(batch["episode_index"].tolist()) <= {0, 1}
        visited.append(indices)
    assert np.array_equal(np.sort(np.concatenate(visited)), np.arange(len(pinned)))
    assert loader.reader.cache.prefetched_gops > 0
    # Credentials stay out of what a run would log.
    for text in (repr(loader.reader), str(loader.state_dict())):
        assert s3.secret_key not in text and s3.access_key not in text
    loader.close()
