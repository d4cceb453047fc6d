"""The one import driver (``robodata.interop`` re-exports it): any recording format that can list its episodes and read each one as
an EpisodeData imports the same way (checked first, skipped when present, one commit each).

"Present" means the dataset holds the episode_index with the same source content: a source
whose episodes carry a fingerprint (``EpisodeData.fingerprint``, stored with the rows like an
upload's) is compared by it. The same content is skipped, wherever it is read from; an episode
of the same source (same id and location) whose content changed is imported again as a
re-ingest (one copy, labels kept for the rows that still exist); an episode_index held by an
episode of another source is refused before anything is written. Episodes stored without a
fingerprint (older imports, formats without one) are skipped, as they always were.

A new importer is one module with a class satisfying ``EpisodeSource`` and an entry in
``robodata.interop._sources.IMPORT_FORMATS``.
"""

from __future__ import annotations

from typing import Protocol

from tqdm import tqdm

from robodata.codec import EncoderSettings
from robodata.errors import BadUploadError
from robodata.format._provenance import StoredUpload, stored_episodes
from robodata.format._tables import frames_uri
from robodata.ingest import EpisodeData, write_episode
from robodata.ingest._import_result import ImportResult, SourceIndexTakenError
from robodata.storage._dataset_root import check_dataset_location
from robodata.storage._failures import storage_step


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
        """Episode ``number`` with its camera frames decoded lazily, as ``write_episode`` takes it;
        its ``fingerprint`` (of the source content, optional) tells a changed episode from a stored one."""
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

    >>> from robodata.lerobot import LeRobotEpisodes
    >>> source = LeRobotEpisodes("exports/demo_lerobot")
    >>> import_episodes(source, "data/imported", episodes=[0, 1], progress=False).imported
    [0, 1]
    >>> import_episodes(source, "data/imported", progress=False).imported  # 0 and 1 are stored: skipped
    [2]
    """
    numbers = source.episode_numbers()
    if episodes is not None:
        unknown = sorted(set(episodes) - set(numbers))
        if unknown:
            raise BadUploadError(source.location, f"has no episodes {unknown}")
        numbers = [n for n in numbers if n in set(episodes)]
    check_dataset_location(dataset_uri, storage_options)  # a missing bucket, refused credentials
    with storage_step("reading which episodes the dataset holds", frames_uri(dataset_uri), storage_options):
        stored = stored_episodes(dataset_uri, storage_options=storage_options)
    result = ImportResult(dataset_uri)
    todo = []
    for number in numbers:
        index = source.robodata_index(number)
        held = stored.get(index)
        if held is None:
            todo.append(number)
        elif _already_stored(source, number, held, dataset_uri):
            result.skipped.append(index)
        else:
            todo.append(number)  # written as a re-ingest: one copy, labels kept
            result.changed.append(index)
    source.check(todo)
    for number in tqdm(todo, desc=f"import-{source.format}", unit="episode", disable=not progress):
        result.add(write_episode(source.read_episode(number), dataset_uri, settings, storage_options=storage_options))
    return result


def _already_stored(source: EpisodeSource, number: int, held: StoredUpload, dataset_uri: str) -> bool:
    """Whether source episode ``number`` is the episode ``held`` at its index: True (skip it),
    False (the same source episode, changed since: import it again), or SourceIndexTakenError
    (an episode of another source holds the index)."""
    if not held.fingerprint:
        return True  # stored without a fingerprint (a source format without them): cannot tell
    episode = source.read_episode(number)  # signals only: camera frames decode when written
    if not episode.fingerprint or episode.fingerprint == held.fingerprint:
        return True
    if (episode.episode_id, episode.origin) == (held.episode_id, held.source_uri):
        return False
    raise SourceIndexTakenError(episode.episode_index, episode.origin, held, dataset_uri)
