"""LeRobot's ``delta_timestamps`` (seconds) resolved to what robodata reads: rows or camera frames.

Both torch datasets resolve them here. A delta that is a whole number of control steps (within
``tolerance_s``) reads the row that many steps away, as LeRobot does at its fps. For a camera key
a delta that is instead a whole number of camera frames (e.g. -1/30 s with 30 fps cameras and
rows at 100 Hz) reads that many camera frames away. Anything else is refused with the rates it
would have to match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal, TypeAlias

# ("row", k): k control steps away; ("camera", j): j camera frames away.
Offset: TypeAlias = tuple[Literal["row", "camera"], int]


def resolve_delta_timestamps(
    delta_timestamps: Mapping[str, Sequence[float]],
    *,
    control_hz: float,
    camera_fps: Callable[[str], float | None] | None = None,
    tolerance_s: float = 1e-4,
) -> dict[str, list[Offset]]:
    """Each key's deltas as row or camera-frame offsets.

    Parameters
    ----------
    delta_timestamps : mapping of str to sequence of float
        Key -> offsets in seconds, as LeRobot takes them.
    control_hz : float
        The dataset's row rate (``ds.metadata.control_hz``).
    camera_fps : callable, optional
        Key -> its camera's frame rate, or None for a per-row key; it may raise for a key the
        dataset does not have. Without it every delta must be a whole number of rows.
    tolerance_s : float, default 1e-4
        How far (seconds) a delta may be from a whole number of steps or frames.

    Returns
    -------
    dict of str to list of (str, int)
        Key -> one ``("row", k)`` or ``("camera", j)`` per delta, in order.

    Raises
    ------
    ValueError
        A delta that is neither a whole number of control steps nor of camera frames.

    Examples
    --------
    >>> resolve_delta_timestamps({"action": [0.0, 0.01, 0.02]}, control_hz=100.0)
    {'action': [('row', 0), ('row', 1), ('row', 2)]}
    >>> resolve_delta_timestamps({"top": [-1 / 30, 0.0]}, control_hz=100.0, camera_fps=lambda key: 30.0)
    {'top': [('camera', -1), ('row', 0)]}
    >>> resolve_delta_timestamps({"action": [0.005]}, control_hz=100.0)
    Traceback (most recent call last):
    ...
    ValueError: delta_timestamps['action'] = 0.005 is not a multiple of 1/100 s (control) within tolerance_s=0.0001
    """
    resolved: dict[str, list[Offset]] = {}
    for key, deltas in delta_timestamps.items():
        fps = camera_fps(key) if camera_fps is not None else None
        per_delta: list[Offset] = []
        for delta in deltas:
            steps = float(delta) * control_hz
            if abs(round(steps) - steps) / control_hz <= tolerance_s:
                per_delta.append(("row", int(round(steps))))
                continue
            frames = float(delta) * fps if fps else None
            if frames is not None and fps is not None and abs(round(frames) - frames) / fps <= tolerance_s:
                per_delta.append(("camera", int(round(frames))))
                continue
            rates = f"1/{control_hz:g} s (control)" + (f" or 1/{fps:g} s (camera)" if fps else "")
            raise ValueError(
                f"delta_timestamps[{key!r}] = {delta} is not a multiple of {rates} within tolerance_s={tolerance_s}"
            )
        resolved[key] = per_delta
    return resolved
