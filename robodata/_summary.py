"""A dataset at a glance: episodes, rows, video bytes, versions and tags."""

from __future__ import annotations

from robodata.format._provenance import stored_uploads
from robodata.format._renditions import rendition_counts
from robodata.format._tables import gops_uri, open_table
from robodata.reader import open_dataset
from robodata.storage._failures import storage_call


def dataset_summary(uri: str, *, version: int | str | None = None, storage_options: dict | None = None) -> dict:
    """Episodes, rows, video bytes, versions and tags of the dataset at ``uri`` (at ``version``).

    >>> dataset_summary("data/demo")["episodes"]
    3
    """
    ds = open_dataset(uri, version=version, storage_options=storage_options)
    gops = open_table(gops_uri(uri), storage_options)
    episodes = ds.episodes()
    video_bytes = 0
    if gops is not None:
        fragments = storage_call("listing GOP fragments", gops_uri(uri), storage_options, gops.get_fragments)
        data_files = [f for fragment in fragments for f in fragment.data_files()]
        video_bytes = sum(_file_size(gops, f, storage_options) for f in data_files)
    return {
        "uri": uri,
        "version": ds.version,
        "gops_version": gops.version if gops is not None else None,
        "episodes": episodes.num_rows,
        "rows": len(ds),
        "cameras": {c: f"{i.width}x{i.height}@{i.fps:g}" for c, i in ds.metadata.cameras.items()},
        "control_hz": ds.metadata.control_hz,
        "gop_size": ds.metadata.gop_size,
        "gop_rows": storage_call("counting GOPs", gops_uri(uri), storage_options, gops.count_rows)
        if gops is not None
        else 0,
        # camera -> {rendition name: GOP rows stored}; a declared rendition not added to every
        # episode yet shows fewer GOP rows than the camera's full-resolution ones
        "renditions": rendition_counts(ds.metadata, gops, storage_options),
        "gops_bytes_on_disk": video_bytes,
        "tags": ds.tags,
        "versions": [v["version"] for v in ds.versions()],
        # episode_index -> how ingest changed its camera frames (turned upright, cropped to even)
        "camera_adjustments": {
            str(u.episode_index): [note for a in u.adjustments for note in a["done"]]
            for u in sorted(
                stored_uploads(uri, storage_options=storage_options, version=ds.version).values(),
                key=lambda u: u.episode_index,
            )
            if u.camera_adjustments
        },
    }


def _file_size(dataset, data_file, storage_options: dict | None) -> int:
    # Lance records each data file's size in the manifest; ask the store only when it did not.
    if data_file.file_size_bytes:
        return int(data_file.file_size_bytes)
    from robodata.storage import fsspec_filesystem, join_uri

    uri = join_uri(dataset.uri, "data", data_file.path)
    try:
        return int(
            storage_call("sizing a data file", uri, storage_options, fsspec_filesystem(uri, storage_options).size, uri)
        )
    except (FileNotFoundError, OSError):
        return 0
