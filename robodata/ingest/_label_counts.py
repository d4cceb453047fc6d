"""How many labelled rows a re-ingest keeps and drops: the rows of an episode's stored copy that
carry at least one annotation value, split by whether the new copy still has their frame_index."""

from __future__ import annotations

from dataclasses import dataclass

import lance
import numpy as np

from robodata.format._ids import episode_filter
from robodata.storage._deadlines import call_with_deadline


@dataclass(frozen=True)
class LabelCounts:
    kept: int
    dropped: int


def count_labels(
    frames: lance.LanceDataset,
    episode_index: int,
    annotations: list[str],
    n_rows: int,
    storage_options: dict | None = None,
) -> LabelCounts:
    """Rows of the stored copy with at least one label value: kept (frame_index < n_rows) or dropped."""
    if not annotations:
        return LabelCounts(0, 0)
    columns, selected = ["frame_index", *annotations], episode_filter(episode_index)
    stored = call_with_deadline(frames.uri, storage_options, frames.to_table, columns=columns, filter=selected)
    if stored.num_rows == 0:
        return LabelCounts(0, 0)
    labelled = np.zeros(stored.num_rows, dtype=bool)
    for name in annotations:
        labelled |= stored[name].is_valid().to_numpy(zero_copy_only=False)
    kept = labelled & (stored["frame_index"].to_numpy() < n_rows)
    return LabelCounts(int(kept.sum()), int(labelled.sum() - kept.sum()))
