"""Find upload batches under an uploads root with one listing: ``<uploads>/<batch>/<episode_id>/``.

A batch is a folder of upload folders (one per episode, each complete once its ``episode.json``
is written, exactly as in ``robodata.storage._uploads``). Batch partitioning (docs/cluster.md, "Scale")
turns each batch into one Dagster partition. As for single uploads, the root is listed once,
recursively (on S3 one paginated ListObjectsV2), and the files are grouped by their first two
folders; files at other depths belong to no batch (an upload folder directly under the root is
an upload of per-episode partitioning, not a batch).
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass

from robodata.storage._uploads import IncompleteUpload, UploadInfo, list_files, uploads_in


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

    >>> import shutil  # two batch folders, one upload each
    >>> _ = shutil.copytree("uploads/episode_000000", "batches/2026-12-01/episode_000000")
    >>> _ = shutil.copytree("uploads/episode_000001", "batches/2026-12-02/episode_000001")
    >>> [b.batch_id for b in scan_upload_batches("batches")]
    ['2026-12-01', '2026-12-02']
    """
    root = str(uploads_root).rstrip("/")
    try:
        entries = list_files(root, storage_options)
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
        listing = uploads_in(batch_uri, uploads, storage_options)
        batches.append(UploadBatch(batch_id, batch_uri, listing.complete, listing.incomplete))
    return batches


__all__ = ["UploadBatch", "batch_fingerprint", "scan_upload_batches"]
