"""Cheap synthetic episodes for scale benchmarks: one 32x32 camera at 10 fps, 10 Hz states."""

from __future__ import annotations

import numpy as np

from robodata.ingest import CameraStream, EpisodeData

SIZE = 32
RATE = 10


def tiny_episode(episode_index: int, seconds: float = 1.0) -> EpisodeData:
    """A ``seconds``-long episode whose frames say which they are: the left half of frame k is a
    flat grey of ``episode_level(episode_index)``, the right half of ``frame_level(k)``, levels
    far enough apart that H.264's rounding never turns one into another.

    >>> len(tiny_episode(3))  # doctest: +SKIP
    10
    """
    steps = max(2, int(round(seconds * RATE)))
    times = (np.arange(steps, dtype=np.int64) * 1_000_000_000) // RATE
    state = np.full((steps, 2), episode_index, dtype=np.float32)

    def frames():
        for k, t in enumerate(times):
            image = np.empty((SIZE, SIZE, 3), dtype=np.uint8)
            image[:, : SIZE // 2] = episode_level(episode_index)
            image[:, SIZE // 2 :] = frame_level(k)
            yield int(t), image

    return EpisodeData(
        episode_id=f"episode_{episode_index:06d}",
        episode_index=episode_index,
        control_hz=float(RATE),
        joint_names=["a", "b"],
        timestamps_ns=times,
        observation_state=state,
        action=state.copy(),
        cameras=[CameraStream("cam", SIZE, SIZE, float(RATE), frames, f"tiny/{episode_index}")],
        task="tiny",
    )


def episode_level(episode_index: int) -> int:
    return (episode_index * 9) % 252


def frame_level(frame: int) -> int:
    return (frame * 25) % 250


def identify(image: np.ndarray) -> tuple[int, int]:
    """(episode level, frame level) read back from a decoded tiny frame."""
    return int(image[SIZE // 2, SIZE // 4, 0]), int(image[SIZE // 2, 3 * SIZE // 4, 0])
