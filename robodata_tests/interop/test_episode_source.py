"""The import driver over any EpisodeSource: a new format is one small class."""

import pytest

import robodata
from robodata.errors import BadUploadError
from robodata.ingest import read_upload
from robodata.interop import import_episodes, open_episode_source


class UploadFolders:
    """A toy format: robodata's own upload folders, numbered 10, 11, ... (robodata index = n - 10)."""

    format = "upload_folders"

    def __init__(self, uploads, refuse=None):
        self.location = "toy-source"
        self._uploads = {10 + i: str(u) for i, u in enumerate(uploads)}
        self.refuse, self.checked, self.read = refuse, [], []

    def episode_numbers(self):
        return list(self._uploads)

    def robodata_index(self, number):
        return read_upload(self._uploads[number]).episode_index

    def check(self, numbers):
        self.checked.append(list(numbers))
        if self.refuse in numbers:
            raise BadUploadError(self._uploads[self.refuse], "refused by the check")

    def read_episode(self, number):
        self.read.append(number)
        return read_upload(self._uploads[number])


def test_driver_checks_everything_first_then_skips_what_is_present(sample_uploads, tmp_path):
    root = str(tmp_path / "ds")
    refusing = UploadFolders(sample_uploads[:2], refuse=11)
    with pytest.raises(BadUploadError, match="refused by the check"):
        import_episodes(refusing, root, progress=False)
    assert refusing.read == [] and not (tmp_path / "ds").exists()  # nothing written

    source = UploadFolders(sample_uploads[:2])
    first = import_episodes(source, root, episodes=[11], progress=False)
    assert (first.imported, first.skipped, source.read) == ([1], [], [11])
    again = import_episodes(source, root, progress=False)
    assert (again.imported, again.skipped, source.checked[-1]) == ([0], [1], [10])
    assert robodata.open(root).episodes()["episode_index"].to_pylist() == [0, 1]
    with pytest.raises(BadUploadError, match=r"toy-source: has no episodes \[3\]"):
        import_episodes(source, root, episodes=[3], progress=False)


def test_an_unknown_format_names_the_ones_there_are():
    with pytest.raises(ValueError, match="unknown import format 'csv'; robodata imports lerobot, aloha_hdf5"):
        open_episode_source("csv", "somewhere")
