"""Which importer reads which format: the one place a format name becomes an EpisodeSource."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from robodata.ingest._episode_source import EpisodeSource
from robodata.interop._hdf5_import import Hdf5Episodes
from robodata.lerobot import LeRobotEpisodes


@dataclass(frozen=True)
class ImportFormat:
    """A source format: its EpisodeSource class and the options (constructor keywords) it takes."""

    source_class: type
    options: tuple[str, ...]


IMPORT_FORMATS: dict[str, ImportFormat] = {
    "lerobot": ImportFormat(LeRobotEpisodes, ("repo_id",)),
    "aloha_hdf5": ImportFormat(
        Hdf5Episodes, ("control_hz", "joint_names", "task", "jpeg_channel_order", "start_index")
    ),
}


def open_episode_source(
    format: str, location: str, *, storage_options: dict | None = None, options: Mapping[str, Any] | None = None
) -> EpisodeSource:
    """The ``format`` source at ``location``; ``options`` may hold every format's options, each
    format takes its own (an orchestrator passes one flat config for all formats).

    >>> options = {"task": "insertion", "repo_id": "lab/aloha"}  # repo_id is lerobot's: left out
    >>> source = open_episode_source("aloha_hdf5", "recordings/episode_*.hdf5", options=options)
    >>> type(source).__name__, source.episode_numbers()
    ('Hdf5Episodes', [0, 1])

    """
    try:
        chosen = IMPORT_FORMATS[format]
    except KeyError:
        raise ValueError(f"unknown import format {format!r}; robodata imports {', '.join(IMPORT_FORMATS)}") from None
    given = {k: v for k, v in (options or {}).items() if k in chosen.options and v is not None}
    return chosen.source_class(location, storage_options=storage_options, **given)
