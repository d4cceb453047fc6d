"""Checks on an episode's control-rate signals; each failure names the file and the problem."""

from __future__ import annotations

import numpy as np

from robodata.errors import BadUploadError

SOURCES = ("human", "policy", "intervention")


def check_signals(
    path: str,
    timestamps_ns: np.ndarray,
    state: np.ndarray,
    action: np.ndarray,
    n_joints: int,
    source: list[str] | None = None,
) -> None:
    n = len(timestamps_ns)
    if n == 0:
        raise BadUploadError(path, "has no state samples")
    steps = np.diff(timestamps_ns)
    if (steps <= 0).any():
        at = int(np.argmax(steps <= 0)) + 1
        raise BadUploadError(
            path,
            f"timestamps must strictly increase; sample {at} ({timestamps_ns[at]} ns) "
            f"follows {timestamps_ns[at - 1]} ns",
        )
    for name, values in (("observation_state", state), ("action", action)):
        if values.ndim != 2 or values.shape != (n, n_joints):
            raise BadUploadError(
                path,
                f"{name} has shape {tuple(values.shape)}, expected ({n}, {n_joints}) for {n_joints} joint names",
            )
        bad = ~np.isfinite(values)
        if bad.any():
            row = int(np.argwhere(bad)[0][0])
            raise BadUploadError(path, f"{name} has NaN or infinite values (first at sample {row})")
    if source is not None:
        unknown = sorted(set(source) - set(SOURCES))
        if unknown:
            raise BadUploadError(path, f"source has unknown values {unknown}; allowed {SOURCES}")


# How far the claimed control rate may be from the rate the timestamps show: jitter and a few
# dropped samples move the median step little; a wrong unit or a wrong field moves it 10x.
RATE_TOLERANCE = 0.25


def check_control_rate(meta_path: str, control_hz: float, states_path: str, timestamps_ns: np.ndarray) -> None:
    """The ``control_hz`` an episode claims agrees with its states' timestamps (within 25%).

    >>> check_control_rate("ep/episode.json", 10.0, "ep/states.parquet", np.arange(5) * 10_000_000)
    Traceback (most recent call last):
    robodata.errors.BadUploadError: ep/episode.json: 'control_hz' is 10 Hz but ep/states.parquet's timestamps are 100 Hz (median step 10 ms)
    """
    if len(timestamps_ns) < 2:
        return
    step_ns = float(np.median(np.diff(timestamps_ns)))
    real_hz = 1e9 / step_ns
    if abs(real_hz / control_hz - 1.0) > RATE_TOLERANCE:
        raise BadUploadError(
            meta_path,
            f"'control_hz' is {control_hz:g} Hz but {states_path}'s timestamps are {real_hz:.4g} Hz "
            f"(median step {step_ns / 1e6:.4g} ms)",
        )
