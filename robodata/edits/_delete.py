"""Delete whole episodes from frames.lance."""

from __future__ import annotations

from robodata.errors import EpisodeNotFoundError
from robodata.format._commits import retry_commit
from robodata.format._ids import episode_filter
from robodata.format._tables import frames_uri, open_frames
from robodata.integrity._gop_leases import holding_writes


def delete_episodes(uri: str, episodes: list[int] | int, *, storage_options: dict | None = None) -> int:
    """Delete whole episodes in one new version (a deletion vector; no data file is rewritten).

    Their GOPs stay until no retained version refers to them and ``collect_garbage`` runs;
    earlier versions still read them.

    Parameters
    ----------
    uri : str
        The dataset root (local or s3://).
    episodes : int or list of int
        The ``episode_index`` values to delete.
    storage_options : dict, optional
        Object-store options; by default from the environment.

    Returns
    -------
    int
        The new version.

    Raises
    ------
    robodata.errors.EpisodeNotFoundError
        An episode the dataset does not hold; nothing was deleted.

    Examples
    --------
    >>> robodata.delete_episodes("data/demo", [2])
    4
    >>> len(robodata.open("data/demo")), len(robodata.open("data/demo", version=3))
    (394, 591)
    >>> robodata.delete_episodes("data/demo", [7])
    Traceback (most recent call last):
    ...
    robodata.errors.EpisodeNotFoundError: data/demo: no episode 7 in the dataset (version 4); nothing deleted
    """
    selected = episode_filter(episodes)  # validates every index first
    wanted = sorted({int(e) for e in ([episodes] if isinstance(episodes, int) else episodes)})

    def delete_once() -> int:
        frames = open_frames(uri, storage_options=storage_options)
        held = set(frames.to_table(columns=["episode_index"], filter=selected)["episode_index"].to_pylist())
        missing = [e for e in wanted if e not in held]
        if missing:
            raise EpisodeNotFoundError(
                f"{uri}: no episode {', '.join(map(str, missing))} in the dataset (version {frames.version}); "
                "nothing deleted"
            )
        frames.delete(selected)
        return frames.version

    open_frames(uri, storage_options=storage_options)  # no dataset: NotFoundError, and no lease left there
    action = f"deleting episodes {wanted}"
    with holding_writes(uri, action, storage_options):  # version cleanup keeps what this is checked against
        return retry_commit(action, frames_uri(uri), delete_once, storage_options=storage_options)
