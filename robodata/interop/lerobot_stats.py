"""Feature statistics in LeRobot's shape: per episode (episodes table ``stats/<feature>/<stat>``
columns) and for the whole dataset (``meta/stats.json``), which LeRobot policies normalise with.

Numbers and vectors: per-dimension min/max/mean/std/quantiles, shape [D]. Video: per-channel
over sampled frames scaled to [0, 1], shape [3, 1, 1], as LeRobot's compute_episode_stats does.
"""

from __future__ import annotations

import numpy as np

QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}
IMAGE_STRIDE = 4  # pixels kept per axis when sampling video frames for statistics


def vector_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """Stats of ``values`` ([N] or [N, D]) per dimension."""
    array = np.asarray(values, dtype=np.float64)
    array = array.reshape(len(array), -1)
    stats = {
        "min": array.min(axis=0),
        "max": array.max(axis=0),
        "mean": array.mean(axis=0),
        "std": array.std(axis=0),
        "count": np.array([len(array)]),
    }
    for name, q in QUANTILES.items():
        stats[name] = np.quantile(array, q, axis=0)
    return stats


def image_stats(frames: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Per-channel stats of sampled RGB frames (H x W x 3 uint8), scaled to [0, 1]."""
    pixels = np.concatenate([f[::IMAGE_STRIDE, ::IMAGE_STRIDE].reshape(-1, 3) for f in frames]) / 255.0
    stats = vector_stats(pixels)
    shaped = {k: v.reshape(3, 1, 1) for k, v in stats.items() if k != "count"}
    shaped["count"] = np.array([len(frames)])
    return shaped


def aggregate(per_episode: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Dataset stats from episode stats: exact min/max/mean/std, count-weighted quantiles
    (the same approximation LeRobot's aggregate_stats makes)."""
    counts = np.array([s["count"][0] for s in per_episode], dtype=np.float64)
    weights = (counts / counts.sum()).reshape((-1,) + (1,) * per_episode[0]["mean"].ndim)
    means = np.stack([s["mean"] for s in per_episode])
    mean = (weights * means).sum(axis=0)
    second = (weights * (np.stack([s["std"] for s in per_episode]) ** 2 + means**2)).sum(axis=0)
    out = {
        "min": np.min([s["min"] for s in per_episode], axis=0),
        "max": np.max([s["max"] for s in per_episode], axis=0),
        "mean": mean,
        "std": np.sqrt(np.maximum(second - mean**2, 0.0)),
        "count": np.array([int(counts.sum())]),
    }
    for name in QUANTILES:
        out[name] = (weights * np.stack([s[name] for s in per_episode])).sum(axis=0)
    return out


def to_json(stats: dict[str, dict[str, np.ndarray]]) -> dict:
    return {key: {name: value.tolist() for name, value in s.items()} for key, s in stats.items()}
