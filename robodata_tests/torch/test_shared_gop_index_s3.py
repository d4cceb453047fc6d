"""DataLoader workers on an s3:// dataset map the training process's GOP index instead of scanning
gops.lance each (moto's server, every request logged): counted GETs, never timings."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.format._tables import gops_uri, open_table
from robodata.integrity._local_gop_files import read_through_lance
from robodata.reader._dataset import gop_store
from robodata.reader._gop_index import GopIndex

pytest.importorskip("torch")
from robodata.torch._torch_dataset import make_dataloader

WRIST = "observation_images_wrist_left"


def gets(s3, since: int, where: str) -> set[tuple[str, str]]:
    """(path, range) of each GET since ``since`` whose path contains ``where``."""
    return {(r.path, r.range) for r in s3.requests(since) if r.method == "GET" and where in r.path}


def scan_only_gets(s3, root: str) -> set[tuple[str, str]]:
    """The GETs a scan for the GOP index makes that a read of every GOP's bytes does not (its
    columns' pages; both read the data files' footers), each through a fresh Lance handle."""
    mark = s3.mark()
    index = GopIndex(open_table(gops_uri(root), s3.storage_options))
    scan = gets(s3, mark, "/gops.lance/data/")
    mark = s3.mark()
    row_ids = index.row_ids(np.arange(len(index))).tolist()
    read_through_lance(open_table(gops_uri(root), s3.storage_options), row_ids, s3.storage_options)
    return scan - gets(s3, mark, "/gops.lance/data/")


def manifest_gets(s3, since: int) -> set[str]:
    return {path for path, _ in gets(s3, since, "/gops.lance/_versions/")}


@pytest.mark.slow  # spawns a DataLoader worker
def test_workers_map_the_gop_index_and_read_the_gops_version_it_was_built_from(s3, s3_root, eight_short_uploads):
    options = s3.storage_options
    root = f"{s3_root}/ds"
    for upload in eight_short_uploads[:2]:
        robodata.ingest_episode(str(upload), root, storage_options=options)
    robodata.open(root, storage_options=options).tag("run")
    loader = make_dataloader(
        root,
        version="run",
        storage_options=options,
        batch_size=16,
        shuffle="none",
        num_workers=1,
        cameras=["wrist_left"],
    )
    main = loader.reader.dataset
    store = gop_store(main)
    assert len(store.index) > 0  # the training process builds its GOP index: gops.lance as it is now
    indexed = store.lance_dataset.version
    pinned = robodata.open(root, version="run", storage_options=options)
    pinned.get_frames([0], cameras=WRIST)  # its own indexes and footers read before counting
    scan_only = scan_only_gets(s3, root)
    assert scan_only  # what a worker's scan of its own would ask for
    mark = s3.mark()
    open_table(gops_uri(root), options)
    [indexed_manifest] = manifest_gets(s3, mark)

    # gops.lance moves on before the workers start: they read the version the index describes
    robodata.ingest_episode(str(eight_short_uploads[2]), root, storage_options=options)
    assert open_table(gops_uri(root), options).version > indexed

    mark = s3.mark()
    visited = []
    for batch in loader:
        indices = batch["index"].numpy()
        assert np.array_equal(batch[WRIST].numpy(), pinned.get_frames(indices, cameras=WRIST)[WRIST])
        visited.append(indices[~batch["padding"].numpy()])
    loader.close()
    assert np.array_equal(np.sort(np.concatenate(visited)), np.arange(len(pinned)))
    epoch = gets(s3, mark, "/gops.lance/data/")
    assert epoch  # the worker read its GOPs from the store
    assert not epoch & scan_only, "a worker scanned gops.lance for a GOP index of its own"
    assert manifest_gets(s3, mark) == {indexed_manifest}
