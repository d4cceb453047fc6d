"""Label columns keyed by (episode_index, frame_index), added without touching video."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa

from robodata.format.tables import open_frames

KEYS = ["episode_index", "frame_index"]
_PROTECTED = {"episode_index", "frame_index", "timestamp_ns"}


def add_annotations(uri: str, labels: pa.Table, *, storage_options: dict | None = None) -> int:
    """Add (or correct) label columns from ``labels``, a table with episode_index, frame_index
    and one column per label. Returns the new version.

    New columns are written as new column files (rows without a label get null); columns that
    already exist are corrected row by row with a merge on the keys. Video is never touched.

    >>> labels = pa.table({"episode_index": [0], "frame_index": [5], "success": [True]})  # doctest: +SKIP
    >>> robodata.add_annotations("data/demo", labels)  # doctest: +SKIP
    """
    missing = set(KEYS) - set(labels.column_names)
    if missing:
        raise ValueError(f"annotation table is missing key columns {sorted(missing)}")
    label_names = [c for c in labels.column_names if c not in KEYS]
    if not label_names:
        raise ValueError("annotation table has no label columns besides the keys")
    reference_suffixes = ("_ref_id", "_gop_index", "_frame_index_in_gop")
    protected = _PROTECTED.intersection(label_names) | {c for c in label_names if c.endswith(reference_suffixes)}
    if protected:
        raise ValueError(f"cannot overwrite dataset columns {sorted(protected)} with annotations")
    frames = open_frames(uri, storage_options=storage_options)
    labels = labels.combine_chunks()
    new = [c for c in label_names if c not in frames.schema.names]
    existing = [c for c in label_names if c in frames.schema.names]
    if new:
        frames.add_columns(_lookup_udf(labels, new), read_columns=KEYS)
    if existing:
        frames.merge_insert(KEYS).when_matched_update_all().execute(labels.select(KEYS + existing))
    return frames.version


def _lookup_udf(labels: pa.Table, names: list[str]):
    keys = _key(labels["episode_index"].to_numpy(), labels["frame_index"].to_numpy())
    order = np.argsort(keys)
    sorted_keys = keys[order]
    schema = pa.schema([labels.schema.field(n) for n in names])
    values = {n: labels[n].combine_chunks() for n in names}

    def lookup(batch: pa.RecordBatch) -> pa.RecordBatch:
        wanted = _key(batch["episode_index"].to_numpy(), batch["frame_index"].to_numpy())
        pos = np.clip(np.searchsorted(sorted_keys, wanted), 0, max(len(sorted_keys) - 1, 0))
        found = sorted_keys[pos] == wanted if len(sorted_keys) else np.zeros(len(wanted), bool)
        take = pa.array(np.where(found, order[pos], 0)).cast(pa.int64())
        arrays = [
            pa.compute.if_else(pa.array(found), values[n].take(take), pa.nulls(len(wanted), values[n].type))
            for n in names
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    return lance.batch_udf(output_schema=schema)(lookup)


def _key(episode: np.ndarray, frame: np.ndarray) -> np.ndarray:
    return episode.astype(np.int64) * (1 << 32) + frame.astype(np.int64)
