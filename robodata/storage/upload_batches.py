"""Find upload batches under an uploads root with one listing: ``<uploads>/<batch>/<episode_id>/``.

A batch is a folder of upload folders (one per episode, each complete once its ``episode.json``
is written, exactly as in ``robodata.storage.uploads``). Batch partitioning (docs/scale-1m.md)
turns each batch into one Dagster partition. As for single uploads, the root is listed once,
recursively (on S3 one paginated ListObjectsV2), and the files are grouped by their first two
folders; files at other depths belong to no batch (an upload folder directly under the root is
an upload of per-episode partitioning, not a batch).
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass

from robodata.storage.uploads import COMPLETE_MARKER, IncompleteUpload, UploadInfo, _fingerprint, _written_at
from robodata.storage.uris import fsspec_filesystem


@dataclass(frozen=True)
class UploadBatch:
    """One batch folder: its complete and incomplete episode uploads."""

    batch_id: str
    uri: str
    complete: list[UploadInfo]
    incomplete: list[IncompleteUpload]

    @property
    def fingerprint(self) -> str:
        """Changes whenever a complete upload of the batch appears, changes or goes away."""
        return batch_fingerprint(self.complete)

    @property
    def last_write(self) -> float:
        """When the newest file of the batch was written (seconds since the epoch)."""
        return max([0.0, *(u.last_write for u in self.complete), *(u.last_write for u in self.incomplete)])


def batch_fingerprint(uploads: list[UploadInfo]) -> str:
    """One fingerprint for a set of complete uploads (their ids and fingerprints).

    >>> batch_fingerprint([])
    'e3b0c44298fc1c14'
    """
    digest = hashlib.sha256()
    for upload in sorted(uploads, key=lambda u: u.episode_id):
        digest.update(f"{upload.episode_id}|{upload.fingerprint}\n".encode())
    return digest.hexdigest()[:16]


def scan_upload_batches(uploads_root: str, storage_options: dict | None = None) -> list[UploadBatch]:
    """Every batch folder under ``uploads_root`` holding at least one upload folder, sorted by
    id, from one recursive listing.

    >>> [b.batch_id for b in scan_upload_batches("uploads")]  # doctest: +SKIP
    ['2026-12-01', '2026-12-02']
    """
    root = str(uploads_root).rstrip("/")
    try:
        entries = _listed_files(root, storage_options)
    except FileNotFoundError:
        return []
    folders: dict[str, dict[str, list[dict]]] = {}
    for relative, entry in entries:
        parts = relative.split("/")
        if len(parts) == 3:
            folders.setdefault(parts[0], {}).setdefault(parts[1], []).append(entry)
    batches = []
    for batch_id, uploads in sorted(folders.items()):
        batch_uri = posixpath.join(root, batch_id)
        complete, incomplete = [], []
        for episode_id, files in sorted(uploads.items()):
            uri = posixpath.join(batch_uri, episode_id)
            last_write = max(_written_at(f) for f in files)
            if any(posixpath.basename(f["name"]) == COMPLETE_MARKER for f in files):
                complete.append(UploadInfo(episode_id, uri, _fingerprint(files), last_write))
            else:
                incomplete.append(IncompleteUpload(episode_id, uri, last_write))
        batches.append(UploadBatch(batch_id, batch_uri, complete, incomplete))
    return batches


def _listed_files(root: str, storage_options: dict | None) -> list[tuple[str, dict]]:
    """(path relative to ``root``, entry) of every file under ``root``, from one recursive listing
    (no maxdepth: s3fs would walk folder by folder)."""
    fs = fsspec_filesystem(root, storage_options)
    listed_root = fs._strip_protocol(root).rstrip("/")
    return [
        (name[len(listed_root) :].strip("/"), entry)
        for name, entry in fs.find(root, detail=True).items()
        if entry.get("type") != "directory"
    ]


__all__ = ["UploadBatch", "batch_fingerprint", "scan_upload_batches"]
