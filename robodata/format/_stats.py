"""Per-episode feature statistics kept beside frames.lance, aggregated per version without a pass
over the data.

Ingest stores, per episode and per feature, moments that merge exactly: the number of values,
their sum, sum of squares, min and max (float64). A version's statistics are the merge of the
moments of the episodes present in that version, so they are exact for state and action and
never need a full scan. Camera features are per channel over pixels in [0, 1] of sampled frames
(the first frame of ``SAMPLED_GOPS`` GOPs spread evenly over the episode, every
``PIXEL_STRIDE``-th pixel per axis: a bounded read however long the episode), shaped
[3, 1, 1] as in LeRobot's ``meta/stats.json``.

Storage: ``<root>/stats.lance``, one row per episode write: ``episode_index``, ``frames_version``
(the frames.lance version that write committed), ``rows`` and the moments as JSON. The stats of
version N take, for each episode present in N, its row with the largest ``frames_version <= N``:
a re-ingest after N or a delete does not change what N reports.

>>> first = vector_moments(np.array([[0.0, 10.0], [2.0, 30.0]]))  # one episode's state, at ingest
>>> second = vector_moments(np.array([[4.0, 20.0]]))                # another episode's
>>> version = summary(merge([first, second]))                       # a version holding both
>>> version["mean"].tolist(), version["max"].tolist(), version["count"].tolist()
([2.0, 20.0], [4.0, 30.0], [3])
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from robodata.format._tables import append_or_create, open_table
from robodata.storage import join_uri
from robodata.storage._failures import storage_call

STATS_TABLE = "stats.lance"
PIXEL_STRIDE = 4  # pixels kept per axis of a sampled frame
SAMPLED_GOPS = 20  # GOPs per camera per episode whose first frame feeds the pixel statistics

STATS_SCHEMA = pa.schema(
    [
        pa.field("episode_index", pa.int64(), nullable=False),
        pa.field("frames_version", pa.int64(), nullable=False),
        pa.field("rows", pa.int64(), nullable=False),
        pa.field("moments", pa.string(), nullable=False),  # JSON: feature -> moments
    ]
)


def stats_uri(root: str) -> str:
    return join_uri(root, STATS_TABLE)


# --- the math ------------------------------------------------------------------------------------
def vector_moments(values: np.ndarray) -> dict:
    """Moments of ``values`` ([N] or [N, D]) per dimension; ``count`` is N.

    >>> vector_moments(np.array([[1.0], [3.0]]))["sum"]
    [4.0]
    """
    array = np.asarray(values, dtype=np.float64)
    array = array.reshape(len(array), -1)
    return {
        "count": int(len(array)),
        "n": int(len(array)),
        "sum": array.sum(axis=0).tolist(),
        "sumsq": np.square(array).sum(axis=0).tolist(),
        "min": (array.min(axis=0) if len(array) else np.full(array.shape[1], np.inf)).tolist(),
        "max": (array.max(axis=0) if len(array) else np.full(array.shape[1], -np.inf)).tolist(),
        "image": False,
    }


def sampled_gops(count: int, limit: int | None = None) -> np.ndarray:
    """Positions, in GOP order, of the GOPs (of ``count``) whose first frame pixel statistics
    sample: at most ``limit`` (default ``SAMPLED_GOPS``), spread evenly.

    >>> sampled_gops(5, limit=3).tolist()
    [0, 2, 4]
    """
    limit = SAMPLED_GOPS if limit is None else limit
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.linspace(0, count - 1, min(count, limit)).round().astype(np.int64))


def pixel_moments(frames: list[np.ndarray]) -> dict:
    """Per-channel moments of RGB frames (H x W x 3 uint8) in [0, 1], every ``PIXEL_STRIDE``-th
    pixel; ``count`` is the number of frames, as LeRobot counts image statistics."""
    pixels = [f[::PIXEL_STRIDE, ::PIXEL_STRIDE].reshape(-1, 3) for f in frames]
    moments = vector_moments(np.concatenate(pixels) / 255.0 if pixels else np.zeros((0, 3)))
    moments.update(count=len(frames), image=True)
    return moments


def merge(parts: list[dict]) -> dict:
    """The moments of the union of the values behind ``parts``."""
    if not parts:
        raise ValueError("no moments to merge")
    return {
        "count": sum(p["count"] for p in parts),
        "n": sum(p["n"] for p in parts),
        "sum": np.sum([p["sum"] for p in parts], axis=0).tolist(),
        "sumsq": np.sum([p["sumsq"] for p in parts], axis=0).tolist(),
        "min": np.min([p["min"] for p in parts], axis=0).tolist(),
        "max": np.max([p["max"] for p in parts], axis=0).tolist(),
        "image": parts[0]["image"],
    }


def summary(moments: dict) -> dict[str, np.ndarray]:
    """mean / std (population) / min / max / count, as LeRobot's stats.json holds them; image
    features shaped [3, 1, 1]."""
    n = max(moments["n"], 1)
    mean = np.asarray(moments["sum"]) / n
    std = np.sqrt(np.maximum(np.asarray(moments["sumsq"]) / n - mean**2, 0.0))
    out = {"mean": mean, "std": std, "min": np.asarray(moments["min"]), "max": np.asarray(moments["max"])}
    if moments["image"]:
        out = {k: v.reshape(-1, 1, 1) for k, v in out.items()}
    out["count"] = np.array([moments["count"]])
    return out


# --- storage -------------------------------------------------------------------------------------
def record_episode_moments(
    root: str,
    episode_index: int,
    frames_version: int,
    rows: int,
    moments: dict[str, dict],
    storage_options: dict | None = None,
) -> None:
    """Store one episode write's moments (feature -> moments), valid from ``frames_version`` on."""
    table = pa.table(
        {
            "episode_index": [int(episode_index)],
            "frames_version": [int(frames_version)],
            "rows": [int(rows)],
            "moments": [json.dumps(moments, sort_keys=True)],
        },
        schema=STATS_SCHEMA,
    )
    append_or_create(stats_uri(root), table, STATS_SCHEMA, storage_options)


def episode_moments_at(
    root: str, version: int, episode_rows: dict[int, int], storage_options: dict | None = None
) -> tuple[dict[int, dict[str, dict]], list[int]]:
    """For each episode of ``episode_rows`` (episode -> rows at ``version``), the moments its
    latest write up to ``version`` stored; and the episodes with none (their write could not store
    them after its commit, see ``record_episode_stats``) or whose stored row count differs, which the
    caller computes itself."""
    table = open_table(stats_uri(root), storage_options)
    found: dict[int, dict[str, dict]] = {}
    if table is not None:
        reading = "reading stored episode statistics"
        stored = storage_call(
            reading, stats_uri(root), storage_options, table.to_table, filter=f"frames_version <= {int(version)}"
        )
        latest: dict[int, tuple[int, int, str]] = {}
        for episode, written, rows, text in zip(
            stored["episode_index"].to_pylist(),
            stored["frames_version"].to_pylist(),
            stored["rows"].to_pylist(),
            stored["moments"].to_pylist(),
            strict=True,
        ):
            if episode in episode_rows and (episode not in latest or written >= latest[episode][0]):
                latest[episode] = (written, rows, text)
        found = {e: json.loads(text) for e, (_, rows, text) in latest.items() if rows == episode_rows[e]}
    missing = sorted(e for e in episode_rows if e not in found)
    return found, missing


def aggregate(per_episode: list[dict[str, dict]]) -> dict[str, dict[str, np.ndarray]]:
    """Dataset statistics (feature -> summary) from per-episode moments."""
    features = sorted({name for moments in per_episode for name in moments})
    return {name: summary(merge([m[name] for m in per_episode if name in m])) for name in features}
