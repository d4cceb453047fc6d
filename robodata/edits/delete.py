from __future__ import annotations

from robodata.format.ids import episode_filter
from robodata.format.tables import open_frames


def delete_episodes(uri: str, episodes: list[int] | int, *, storage_options: dict | None = None) -> int:
    """Delete episodes' rows from frames.lance (a deletion vector; no data file is rewritten)
    and return the new version. Their GOPs stay until ``collect_garbage``.

    >>> robodata.delete_episodes("data/demo", [3])  # doctest: +SKIP
    """
    frames = open_frames(uri, storage_options=storage_options)
    frames.delete(episode_filter(episodes))
    return frames.version
