"""A dataset's version history: every version of frames.lance, its tags, and tagging this one.

``RoboDataset`` inherits these from ``VersionHistory``; they use only its public ``uri``,
``storage_options``, ``version`` and ``lance_dataset``, and so does ``_read``, the storage step
every read of frames.lance goes through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import lance
import pyarrow as pa

from robodata.format._commits import retry_commit
from robodata.format._schema import plain_strings
from robodata.format._tables import frames_uri
from robodata.storage._failures import storage_call

T = TypeVar("T")


class VersionHistory:
    """The version methods of ``RoboDataset`` (its base class; not made on its own)."""

    uri: str

    @property
    def storage_options(self) -> dict | None:
        raise NotImplementedError

    @property
    def version(self) -> int:
        raise NotImplementedError

    @property
    def lance_dataset(self) -> lance.LanceDataset:
        raise NotImplementedError

    def versions(self) -> list[dict]:
        """Every version of frames.lance.

        Returns
        -------
        list of dict
            One per version, oldest first: ``version``, ``timestamp`` and Lance's metadata.

        Examples
        --------
        >>> [v["version"] for v in ds.versions()]
        [1, 2, 3]
        """
        return [dict(version) for version in self._read("listing versions", self.lance_dataset.versions)]

    @property
    def tags(self) -> dict[str, int]:
        """Tag name -> version."""
        return {
            name: info["version"] for name, info in self._read("listing tags", self.lance_dataset.tags.list).items()
        }

    def tag(self, name: str) -> int:
        """Name this version (e.g. after a training run) so ``open(uri, version=name)`` finds it.

        Parameters
        ----------
        name : str
            The tag; tagging the same version twice with it is a no-op.

        Returns
        -------
        int
            This version.

        Raises
        ------
        ValueError
            ``name`` already names another version.

        Examples
        --------
        >>> ds.tag("run-42")
        3
        >>> robodata.open("data/demo", version="run-42").version, ds.tags
        (3, {'run-42': 3})
        """
        existing = self.tags.get(name)
        if existing is not None and existing != self.version:
            raise ValueError(f"tag {name!r} already names version {existing}, not {self.version}")
        if existing is None:
            action = f"tagging version {self.version} as {name!r}"
            frames = self.lance_dataset
            retry_commit(action, frames.uri, lambda: self._read(action, frames.tags.create, name, self.version))
        return self.version

    def _read(self, action: str, fn: Callable[..., T], /, *args, **kwargs) -> T:
        """``fn`` (a call on frames.lance) as a storage step, under the storage deadline (the
        dataset's reads of rows go through it too)."""
        result = storage_call(action, frames_uri(self.uri), self.storage_options, fn, *args, **kwargs)
        return plain_strings(result) if isinstance(result, pa.Table) else result  # texts as users know them
