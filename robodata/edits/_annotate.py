"""Label columns keyed by (episode_index, frame_index), added without touching video."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa

from robodata.format._commits import retry_commit
from robodata.format._ids import episode_filter
from robodata.format._tables import frames_uri, open_frames
from robodata.integrity._frames_checksums import record_frames_checksums
from robodata.integrity._gop_leases import holding_writes

KEYS = ["episode_index", "frame_index"]
_PROTECTED = {"episode_index", "frame_index", "timestamp_ns"}


class AnnotationResult(int):
    """The dataset version ``add_annotations`` wrote (it is that int), and the label rows it
    could not apply because the dataset has no such (episode_index, frame_index) row.

    >>> labels = pa.table({"episode_index": [0, 0, 42], "frame_index": [5, 6, 0], "success": [True, True, False]})
    >>> result = robodata.add_annotations("data/demo", labels)
    >>> int(result), result.labelled_rows, result.unmatched_rows, result.unmatched_episodes
    (4, 2, 1, [42])
    """

    labelled_rows: int
    unmatched_rows: int
    unmatched_episodes: list[int]  # episodes with at least one unmatched label row

    def __new__(cls, version: int, labelled_rows: int, unmatched_rows: int, unmatched_episodes: list[int]):
        result = super().__new__(cls, version)
        result.labelled_rows, result.unmatched_rows = labelled_rows, unmatched_rows
        result.unmatched_episodes = unmatched_episodes
        return result

    @property
    def version(self) -> int:
        return int(self)

    def describe(self) -> str:
        """One line for a person: what was labelled and what was not."""
        text = f"labelled {self.labelled_rows} rows; dataset version {self.version}"
        if self.unmatched_rows:
            text += (
                f"; {self.unmatched_rows} label rows NOT applied: no such rows in the dataset "
                f"(episodes {_shorten(self.unmatched_episodes)})"
            )
        return text


def add_annotations(uri: str, labels: pa.Table, *, storage_options: dict | None = None) -> AnnotationResult:
    """Add (or correct) label columns, in one new version; video is never touched.

    New columns are written as new column files (rows without a label get null); columns that
    already exist are corrected row by row with a merge on the keys.

    Parameters
    ----------
    uri : str
        The dataset root (local or s3://).
    labels : pyarrow.Table
        ``episode_index``, ``frame_index`` and one column per label.
    storage_options : dict, optional
        Object-store options; by default from the environment.

    Returns
    -------
    AnnotationResult
        The new version (it is that int), with the label rows that match no row of the dataset
        counted (``unmatched_rows``, ``unmatched_episodes``): reported, not applied.

    Raises
    ------
    ValueError
        Key columns missing, no label column, a label named like a dataset column that labels
        may not overwrite, or no label row matching the dataset (nothing written).

    Examples
    --------
    >>> labels = pa.table({"episode_index": [0, 9], "frame_index": [5, 0], "success": [True, False]})
    >>> result = robodata.add_annotations("data/demo", labels)
    >>> int(result), result.unmatched_rows, result.unmatched_episodes
    (4, 1, [9])
    >>> robodata.open("data/demo")[5]["success"], robodata.open("data/demo")[6]["success"]
    (True, None)
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
    labels = labels.combine_chunks()

    def annotate_once() -> AnnotationResult:
        # Planned on the newest version each time: a compaction or an ingest that committed
        # first changed the fragments this write would add column files to.
        frames = open_frames(uri, storage_options=storage_options)
        matched, unmatched = _split_unmatched(frames, labels)
        unmatched_episodes = sorted(set(unmatched["episode_index"].to_pylist()))
        if matched.num_rows == 0:
            raise ValueError(
                f"{uri}: none of the {unmatched.num_rows} label rows matches a row of the dataset "
                f"(episodes {_shorten(unmatched_episodes)}); nothing written"
            )
        new = [c for c in label_names if c not in frames.schema.names]
        existing = [c for c in label_names if c in frames.schema.names]
        if new:
            frames.add_columns(_lookup_udf(matched, new), read_columns=KEYS)
        if existing:
            frames.merge_insert(KEYS).when_matched_update_all().execute(matched.select(KEYS + existing))
        return AnnotationResult(frames.version, matched.num_rows, unmatched.num_rows, unmatched_episodes)

    open_frames(uri, storage_options=storage_options)  # no dataset: NotFoundError, and no lease left there
    action = f"adding labels {label_names}"
    with holding_writes(uri, action, storage_options):  # version cleanup keeps what this is checked against
        result = retry_commit(action, frames_uri(uri), annotate_once, storage_options=storage_options)
    record_frames_checksums(uri, storage_options)  # the label column files just added
    return result


def _split_unmatched(frames, labels: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(label rows whose key the dataset holds, the others). A null frame_index (an episode
    label for an episode the dataset lacks, see ``read_labels``) never matches."""
    episodes = sorted({e for e in labels["episode_index"].to_pylist() if e is not None})
    stored = frames.to_table(columns=KEYS, filter=episode_filter(episodes)) if episodes else None
    stored_keys = (
        _key(stored["episode_index"].to_numpy(), stored["frame_index"].to_numpy())
        if stored is not None
        else np.empty(0, np.int64)
    )
    present = pa.compute.and_(
        pa.compute.is_valid(labels["episode_index"]), pa.compute.is_valid(labels["frame_index"])
    ).to_numpy(zero_copy_only=False)
    keys = _key(labels["episode_index"].fill_null(0).to_numpy(), labels["frame_index"].fill_null(0).to_numpy())
    matched = present & np.isin(keys, stored_keys)
    return labels.filter(pa.array(matched)), labels.filter(pa.array(~matched))


def _shorten(values: list[int], limit: int = 10) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


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
