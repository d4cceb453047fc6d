"""Find complete uploads under an uploads root (a local folder or an s3:// prefix)."""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass

from robodata.storage.uris import fsspec_filesystem

COMPLETE_MARKER = "episode.json"


@dataclass(frozen=True)
class UploadInfo:
    """A complete upload: its episode id, its URI, and a fingerprint that changes whenever any
    of its files does."""

    episode_id: str
    uri: str
    fingerprint: str


def list_complete_uploads(uploads_root: str, storage_options: dict | None = None) -> list[UploadInfo]:
    """Every folder directly under ``uploads_root`` whose ``episode.json`` exists, sorted by id.

    >>> [u.episode_id for u in list_complete_uploads("demo/uploads")]  # doctest: +SKIP
    ['episode_000000', 'episode_000001']
    """
    fs = fsspec_filesystem(uploads_root, storage_options)
    root = str(uploads_root).rstrip("/")
    try:
        entries = fs.ls(root, detail=True)
    except FileNotFoundError:
        return []
    found = []
    for entry in entries:
        if entry["type"] != "directory":
            continue
        name = posixpath.basename(entry["name"].rstrip("/"))
        uri = posixpath.join(root, name)
        files = fs.ls(uri, detail=True)
        if not any(posixpath.basename(f["name"]) == COMPLETE_MARKER for f in files):
            continue
        found.append(UploadInfo(name, uri, _fingerprint(files)))
    return sorted(found, key=lambda u: u.episode_id)


def upload_fingerprint(upload_uri: str, storage_options: dict | None = None) -> str:
    """The fingerprint ``list_complete_uploads`` reports for the upload folder ``upload_uri``.

    >>> upload_fingerprint("demo/uploads/episode_000000")  # doctest: +SKIP
    '3f0c2a9d41b7e655'
    """
    uri = str(upload_uri).rstrip("/")
    return _fingerprint(fsspec_filesystem(uri, storage_options).ls(uri, detail=True))


def _fingerprint(files: list[dict]) -> str:
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: f["name"]):
        stamp = f.get("ETag") or f.get("mtime") or f.get("LastModified") or ""
        digest.update(f"{posixpath.basename(f['name'])}|{f.get('size')}|{stamp}\n".encode())
    return digest.hexdigest()[:16]


__all__ = ["UploadInfo", "list_complete_uploads", "upload_fingerprint"]
