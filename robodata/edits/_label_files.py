"""Read a label file (Parquet, CSV or JSON lines) into the table ``add_annotations`` takes.

A file keyed by ``episode_index`` and ``frame_index`` labels single rows (an offline detector's
output); a file with ``episode_index`` only labels whole episodes (success / failure), and each
label is repeated on every row of its episode.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from robodata.edits._annotate import KEYS
from robodata.errors import NotFoundError
from robodata.format._tables import frames_uri, open_frames
from robodata.storage import fsspec_filesystem
from robodata.storage._arrow_input import arrow_input
from robodata.storage._failures import storage_call

_READERS = {
    ".parquet": pq.read_table,
    ".csv": pa_csv.read_csv,
    ".json": pa_json.read_json,
    ".jsonl": pa_json.read_json,
}


def read_labels(path: str, dataset_uri: str, *, storage_options: dict | None = None) -> pa.Table:
    """The labels in ``path`` as (episode_index, frame_index, label...) rows of ``dataset_uri``.

    >>> with open("success.csv", "w") as f:
    ...     _ = f.write("episode_index,frame_index,success\\n0,5,true\\n0,6,false\\n")
    >>> read_labels("success.csv", "data/demo").column_names
    ['episode_index', 'frame_index', 'success']
    """
    suffix = "." + str(path).rsplit(".", 1)[-1].lower() if "." in str(path) else ""
    reader = _READERS.get(suffix)
    if reader is None:
        raise ValueError(f"{path}: unsupported label file type; use one of {sorted(_READERS)}")
    try:
        labels = reader(arrow_input(fsspec_filesystem(path, storage_options), path))
    except FileNotFoundError:
        raise NotFoundError(f"{path}: label file does not exist") from None
    except pa.ArrowInvalid as exc:
        raise ValueError(f"{path}: not a readable {suffix[1:]} file ({exc})") from None
    if "episode_index" not in labels.column_names:
        raise ValueError(f"{path}: needs an episode_index column (and frame_index for per-row labels)")
    labels = _as_int64(labels, "episode_index")
    if "frame_index" in labels.column_names:
        labels = _as_int64(labels, "frame_index")
        _check_unique(path, labels, KEYS)
        return labels
    _check_unique(path, labels, ["episode_index"])
    return _per_row(labels, dataset_uri, storage_options)


def _per_row(labels: pa.Table, dataset_uri: str, storage_options: dict | None) -> pa.Table:
    """Per-episode labels repeated on every row of each episode the dataset holds; an episode
    the dataset lacks keeps one row with a null frame_index, so ``add_annotations`` reports it."""
    frames = open_frames(dataset_uri, storage_options=storage_options)
    rows = storage_call(
        "reading the dataset's row keys", frames_uri(dataset_uri), storage_options, frames.to_table, columns=KEYS
    )
    joined = rows.join(labels, keys="episode_index", join_type="right outer", use_threads=False)
    return joined.select(KEYS + [c for c in labels.column_names if c != "episode_index"])


def _as_int64(table: pa.Table, name: str) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, table[name].cast(pa.int64()))


def _check_unique(path: str, labels: pa.Table, keys: list[str]) -> None:
    counts = labels.group_by(keys, use_threads=False).aggregate([([], "count_all")])
    repeated = counts.filter(pc.greater(counts["count_all"], 1))
    if repeated.num_rows:
        first = {k: repeated[k][0].as_py() for k in keys}
        raise ValueError(f"{path}: {repeated.num_rows} keys are labelled more than once (first {first})")
