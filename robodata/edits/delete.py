"""Delete whole episodes from frames.lance."""

from __future__ import annotations

from robodata.errors import EpisodeNotFoundError
from robodata.format.ids import episode_filter
from robodata.format.tables import open_frames


def delete_episodes(uri: str, episodes: list[int] | int, *, storage_options: dict | None = None) -> int:
    """Delete episodes' rows from frames.lance (a deletion vector; no data file is rewritten)
    and return the new version. Their GOPs stay until ``collect_garbage``. Asking for an
    episode the dataset does not hold is an EpisodeNotFoundError, and nothing is deleted.

    >>> robodata.delete_episodes("data/demo", [3])  # doctest: +SKIP
    """
    selected = episode_filter(episodes)  # validates every index first
    frames = open_frames(uri, storage_options=storage_options)
    wanted = sorted({int(e) for e in ([episodes] if isinstance(episodes, int) else episodes)})
    held = set(frames.to_table(columns=["episode_index"], filter=selected)["episode_index"].to_pylist())
    missing = [e for e in wanted if e not in held]
    if missing:
        raise EpisodeNotFoundError(
            f"{uri}: no episode {', '.join(map(str, missing))} in the dataset (version {frames.version}); "
            "nothing deleted"
        )
    frames.delete(selected)
    return frames.version
