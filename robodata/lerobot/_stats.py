"""Feature statistics exactly as LeRobot computes them: per episode (the episodes table's
``stats/<feature>/<stat>`` columns) and for the whole dataset (``meta/stats.json``), which LeRobot
policies normalise with.

Ported from LeRobot 0.6.1 ``lerobot/datasets/compute_stats.py`` (``compute_episode_stats``,
``RunningQuantileStats``, ``sample_indices``, ``auto_downsample_height_width``,
``aggregate_stats``), so that a robodata dataset reports the numbers LeRobot would have written:

- numbers and vectors: every row of the episode, per dimension min/max/mean/std and the
  quantiles q01..q99 from a 5000-bin histogram (LeRobot's estimate, not ``np.quantile``); shape
  [D] ([1] for scalars); values in float32 when the data is (LeRobot's ``result_type(x, float32)``).
- camera frames: ``sample_indices(episode length)`` rows (100 for episodes of 100..~460 rows, all
  of a shorter one, ``n ** 0.75`` of a longer one), each frame CHW uint8 taken every
  ``int(width / 150)``-th pixel when its larger side is 300 or more, per channel over all those
  pixels, divided by 255, shape [3, 1, 1]; ``count`` is the number of sampled frames.
- the dataset: min of mins, max of maxes, count-weighted mean, the pooled variance, and
  count-weighted quantiles (LeRobot's approximation).
"""

from __future__ import annotations

import numpy as np

QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}
NUM_QUANTILE_BINS = 5000


def estimate_num_samples(length: int, minimum: int = 100, maximum: int = 10_000, power: float = 0.75) -> int:
    """How many frames of an episode of ``length`` rows LeRobot samples for image statistics."""
    if length < minimum:
        minimum = length
    return max(minimum, min(int(length**power), maximum))


def sample_indices(length: int) -> list[int]:
    """The positions, within an episode of ``length`` rows, of the frames LeRobot samples.

    >>> sample_indices(5)
    [0, 1, 2, 3, 4]
    """
    return np.round(np.linspace(0, length - 1, estimate_num_samples(length))).astype(int).tolist()


def downsample(chw: np.ndarray, target: int = 150, threshold: int = 300) -> np.ndarray:
    """LeRobot's ``auto_downsample_height_width`` of one CHW frame."""
    _, height, width = chw.shape
    if max(width, height) < threshold:
        return chw
    factor = int(width / target) if width > height else int(height / target)
    return chw[:, ::factor, ::factor]


def _histogram_quantile(hist: np.ndarray, edges: np.ndarray, target: float) -> float:
    cumsum = np.cumsum(hist)
    idx = int(np.searchsorted(cumsum, target))
    if idx == 0:
        return edges[0]
    if idx >= len(cumsum):
        return edges[-1]
    before = cumsum[idx - 1]
    inside = cumsum[idx] - before
    if inside == 0:
        return edges[idx]
    return edges[idx] + (target - before) / inside * (edges[idx + 1] - edges[idx])


def _stats_of_rows(rows: np.ndarray) -> dict[str, np.ndarray]:
    """LeRobot's statistics of ``rows`` ([N, D]) in one batch (``RunningQuantileStats.update``
    once, or the plain moments with quantiles set to the mean when N < 2)."""
    rows = rows.astype(np.result_type(rows.dtype, np.float32), copy=False)
    if len(rows) < 2:
        mean = np.mean(rows, axis=0)
        out = {"min": np.min(rows, axis=0), "max": np.max(rows, axis=0), "mean": mean, "std": np.std(rows, axis=0)}
        out.update({name: mean.copy() for name in QUANTILES})
        return out
    low, high = np.min(rows, axis=0), np.max(rows, axis=0)
    mean = np.mean(rows, axis=0)
    std = np.sqrt(np.maximum(0, np.mean(rows**2, axis=0) - mean**2))
    out = {"min": low, "max": high, "mean": mean, "std": std}
    quantiles: dict[str, list[float]] = {name: [] for name in QUANTILES}
    for i in range(rows.shape[1]):
        edges = np.linspace(low[i] - 1e-10, high[i] + 1e-10, NUM_QUANTILE_BINS + 1)
        hist, _ = np.histogram(rows[:, i], bins=edges)
        for name, q in QUANTILES.items():
            quantiles[name].append(_histogram_quantile(hist, edges, q * len(rows)))
    out.update({name: np.array(values) for name, values in quantiles.items()})
    return out


def vector_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """LeRobot's episode stats of a per-frame feature: ``values`` [N] (stats shaped [1]) or [N, D]."""
    array = np.asarray(values)
    stats = _stats_of_rows(array.reshape(len(array), -1))
    stats = {k: np.asarray(v).reshape(-1) for k, v in stats.items()}
    stats["count"] = np.array([len(array)])
    return stats


def image_stats(frames: list[np.ndarray]) -> dict[str, np.ndarray]:
    """LeRobot's episode stats of a camera from its sampled frames (H x W x 3 uint8, in
    ``sample_indices`` order): per channel in [0, 1], shaped [3, 1, 1]."""
    chw = [downsample(np.ascontiguousarray(f).transpose(2, 0, 1)) for f in frames]
    pixels = np.concatenate([f.transpose(1, 2, 0).reshape(-1, f.shape[0]) for f in chw])
    stats = _stats_of_rows(pixels)
    shaped = {k: (np.asarray(v) / 255.0).reshape(-1, 1, 1) for k, v in stats.items()}
    shaped["count"] = np.array([len(frames)])
    return shaped


def aggregate(per_episode: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One feature's dataset stats from its episode stats, as LeRobot's ``aggregate_feature_stats``."""
    means = np.stack([s["mean"] for s in per_episode])
    variances = np.stack([s["std"] ** 2 for s in per_episode])
    counts = np.stack([s["count"] for s in per_episode])
    total = counts.sum(axis=0)
    while counts.ndim < means.ndim:
        counts = np.expand_dims(counts, axis=-1)
    mean = (means * counts).sum(axis=0) / total
    variance = ((variances + (means - mean) ** 2) * counts).sum(axis=0) / total
    out = {
        "min": np.min(np.stack([s["min"] for s in per_episode]), axis=0),
        "max": np.max(np.stack([s["max"] for s in per_episode]), axis=0),
        "mean": mean,
        "std": np.sqrt(variance),
        "count": total,
    }
    for name in QUANTILES:
        if all(name in s for s in per_episode):
            out[name] = (np.stack([s[name] for s in per_episode]) * counts).sum(axis=0) / total
    return out


def aggregate_all(per_episode: list[dict[str, dict[str, np.ndarray]]]) -> dict[str, dict[str, np.ndarray]]:
    """Dataset stats (feature -> stats) from episode stats (each feature over the episodes having it)."""
    keys = list(dict.fromkeys(k for stats in per_episode for k in stats))
    return {k: aggregate([s[k] for s in per_episode if k in s]) for k in keys}


def to_json(stats: dict[str, dict[str, np.ndarray]]) -> dict:
    return {key: {name: value.tolist() for name, value in s.items()} for key, s in stats.items()}
