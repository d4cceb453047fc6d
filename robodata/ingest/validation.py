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
                f"{name} has shape {tuple(values.shape)}, expected ({n}, {n_joints}) "
                f"for {n_joints} joint names",
            )
        bad = ~np.isfinite(values)
        if bad.any():
            row = int(np.argwhere(bad)[0][0])
            raise BadUploadError(path, f"{name} has NaN or infinite values (first at sample {row})")
    if source is not None:
        unknown = sorted(set(source) - set(SOURCES))
        if unknown:
            raise BadUploadError(path, f"source has unknown values {unknown}; allowed {SOURCES}")
