"""Copy a local folder to a dataset or uploads location (a directory or s3://)."""

from __future__ import annotations

from pathlib import Path

from robodata.storage._failures import storage_call
from robodata.storage._uris import fsspec_filesystem, is_remote, join_uri


def put_folder(local: str | Path, uri: str, storage_options: dict | None = None, last: tuple[str, ...] = ()) -> str:
    """Copy every file under ``local`` to ``uri``, the files named in ``last`` after all others
    (an upload's ``episode.json`` marks it complete: nothing lists it half-copied). Returns ``uri``.

    >>> put_folder("uploads/episode_000000", "memory://lab/uploads/episode_000000", last=("episode.json",))
    'memory://lab/uploads/episode_000000'
    >>> sorted(p.rsplit("/", 1)[1] for p in fsspec_filesystem("memory://lab").find("/lab/uploads"))
    ['episode.json', 'states.parquet', 'top.mp4', 'wrist_left.mp4', 'wrist_right.mp4']
    """
    local = Path(local)
    fs = fsspec_filesystem(uri, storage_options)
    files = sorted((p for p in local.rglob("*") if p.is_file()), key=lambda p: (p.name in last, p.as_posix()))
    for path in files:
        target = join_uri(uri, *path.relative_to(local).parts)
        if not is_remote(uri):
            fs.makedirs(str(Path(target).parent), exist_ok=True)
        storage_call(f"copying {path.name}", target, storage_options, fs.put_file, str(path), target)
    return uri
