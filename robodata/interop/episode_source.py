"""The one import driver: any recording format that can list its episodes and read each one as
an EpisodeData imports the same way (checked first, skipped when present, one commit each).

A new importer is one module with a class satisfying ``EpisodeSource`` and an entry in
``robodata.interop.sources.IMPORT_FORMATS``.
"""

from __future__ import annotations

from typing import Protocol

from tqdm import tqdm

from robodata.codec import EncoderSettings
from robodata.errors import BadUploadError
from robodata.ingest import EpisodeData, write_episode
from robodata.interop.import_result import ImportResult, existing_episodes


class EpisodeSource(Protocol):
    """Numbered episodes of one recording (a LeRobot root, a set of HDF5 files, ...)."""

    format: str  # the name users pass as ``format`` (e.g. "lerobot")
    location: str  # where the source is, for messages

    def episode_numbers(self) -> list[int]:
        """The source's own episode numbers, in import order."""
        ...

    def robodata_index(self, number: int) -> int:
        """The robodata episode_index source episode ``number`` becomes."""
        ...

    def check(self, numbers: list[int]) -> None:
        """Raise (naming the file and the problem) if any of these episodes cannot be imported."""
        ...

    def read_episode(self, number: int) -> EpisodeData:
        """Episode ``number`` with its camera frames decoded lazily, as ``write_episode`` takes it."""
        ...


def import_episodes(
    source: EpisodeSource,
    dataset_uri: str,
    *,
    episodes: list[int] | None = None,
    settings: EncoderSettings | None = None,
    storage_options: dict | None = None,
    progress: bool = True,
) -> ImportResult:
    """Import ``source``'s ``episodes`` (source numbers, default all) into ``dataset_uri``.

    Episodes already in the dataset are skipped, so an interrupted import resumes; every other
    selected episode is checked before the first is written; each is then one commit.

    >>> import_episodes(open_episode_source("lerobot", "exports/demo"), "data/demo").imported  # doctest: +SKIP
    [0, 1]
    """
    numbers = source.episode_numbers()
    if episodes is not None:
        unknown = sorted(set(episodes) - set(numbers))
        if unknown:
            raise BadUploadError(source.location, f"has no episodes {unknown}")
        numbers = [n for n in numbers if n in set(episodes)]
    present = existing_episodes(dataset_uri, storage_options=storage_options)
    result = ImportResult(dataset_uri)
    todo = []
    for number in numbers:
        index = source.robodata_index(number)
        if index in present:
            result.skipped.append(index)
        else:
            todo.append(number)
    source.check(todo)
    for number in tqdm(todo, desc=f"import-{source.format}", unit="episode", disable=not progress):
        result.add(write_episode(source.read_episode(number), dataset_uri, settings, storage_options=storage_options))
    return result
