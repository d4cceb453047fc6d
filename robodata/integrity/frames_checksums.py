"""Checksums for frames.lance: the xxh3-64 of every data file of the table, so flipped bytes in
row data (state, action, labels, references, or Lance's own page metadata) surface as one
``CorruptRowsError`` naming the table, the fragment, the file and its rows, instead of wrong
values or a raw Lance decoding error.

Why per data file, and why beside the table: Lance data files are immutable. Ingest, annotate
(new column files), compaction (new files for rewritten fragments) and re-ingest only ever add
files; delete adds a deletion file and leaves data files alone. So a checksum taken once for a
file stays right for as long as any version lists it, whatever edits come later, and a file
with a checksum covers every byte of it (padding and page headers included). Each checksum is
an empty object ``<root>/_checksums/frames.lance/<data file>.<size>.<xxh3 hex>``: written in one
PUT by whichever writer finds the file unrecorded (concurrent writers write the same name), and
one LIST reads them all. Writers record the files their commit added right after it
(``record_frames_checksums``); a file a crash left unrecorded is recorded by the next writer or by
``robodata add-checksums``. Datasets written before have none; they still open (reads say nothing,
``verify`` notes the unrecorded files) until ``robodata add-checksums`` records them.

What is checked where: ``robodata verify`` (``check_frames_files``) reads every data file of the
version and compares its bytes. Opening a dataset (``verify_frames_on_read``) reads no row data:
one LIST of the checksums and one LIST of ``frames.lance/data/`` compare each recorded file's
size with the stored file's (a truncated, extended or missing file is refused); a byte changed
in place is found by ``verify`` only. So opening a large remote dataset in every training worker
costs two listings, not a read of the whole table.

Each call builds one file system and uses it for all its requests: a new s3fs instance per
request builds a new botocore client on fsspec's single event-loop thread (loading its JSON
models there), which serialised every s3fs call of the process behind client construction and
left unclosed clients behind; two racing writers recording checksums stalled on it.

"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import xxhash

from robodata.errors import CorruptRowsError
from robodata.format.tables import frames_uri, open_table
from robodata.storage import fsspec_filesystem, join_uri

CHECKSUM_DIR = "_checksums"
TABLE = "frames.lance"


def checksums_dir(root: str) -> str:
    return join_uri(root, CHECKSUM_DIR, TABLE)


def file_checksum(data: bytes) -> int:
    return xxhash.xxh3_64_intdigest(data)


def recorded_checksums(root: str, storage_options: dict | None = None, fs: Any = None) -> dict[str, tuple[int, int]]:
    """data file name -> (size, xxh3) for every recorded frames.lance data file."""
    folder = checksums_dir(root)
    fs = fs if fs is not None else fsspec_filesystem(folder, storage_options)
    try:
        names = [p.rsplit("/", 1)[-1] for p in fs.ls(folder, detail=False)]
    except FileNotFoundError:
        return {}
    recorded = {}
    for name in names:
        stem, size, digest = name.rsplit(".", 2)
        recorded[stem] = (int(size), int(digest, 16))
    return recorded


@dataclass
class DataFile:
    fragment: int
    name: str
    rows: int


def _data_files(frames) -> list[DataFile]:
    return [
        DataFile(fragment.fragment_id, f.path.rsplit("/", 1)[-1], fragment.metadata.physical_rows)
        for fragment in frames.get_fragments()
        for f in fragment.data_files()
    ]


def _read(root: str, name: str, fs: Any) -> bytes:
    return fs.cat_file(join_uri(frames_uri(root), "data", name))


def _stored_sizes(root: str, fs: Any) -> dict[str, int]:
    """data file name -> size of every file in frames.lance/data/ (one LIST)."""
    folder = join_uri(frames_uri(root), "data")
    try:
        entries = fs.ls(folder, detail=True)
    except FileNotFoundError:
        return {}
    return {str(e["name"]).rsplit("/", 1)[-1]: int(e["size"]) for e in entries}


def record_frames_checksums(root: str, storage_options: dict | None = None) -> int:
    """Record the checksum of every data file of frames.lance's newest version that has none;
    returns how many were recorded. Run by every writer of frames.lance after its commit."""
    frames = open_table(frames_uri(root), storage_options)
    if frames is None:
        return 0
    folder = checksums_dir(root)
    fs = fsspec_filesystem(folder, storage_options)
    recorded = recorded_checksums(root, storage_options, fs)
    missing = [f for f in _data_files(frames) if f.name.removesuffix(".lance") not in recorded]
    if missing and not folder.startswith(("s3://", "gs://", "az://")):
        fs.makedirs(folder, exist_ok=True)
    for file in missing:
        data = _read(root, file.name, fs)
        stem = file.name.removesuffix(".lance")
        fs.pipe_file(join_uri(folder, f"{stem}.{len(data)}.{file_checksum(data):016x}"), b"")
    return len(missing)


@dataclass
class FramesCheck:
    """What ``check_frames_files`` found in one version of frames.lance."""

    checked: int = 0
    unrecorded: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def check_frames_files(root: str, frames, storage_options: dict | None = None) -> FramesCheck:
    """Compare every data file of ``frames`` (an opened version of frames.lance) with its
    recorded checksum; files without one are listed as unrecorded, not failed."""
    fs = fsspec_filesystem(frames_uri(root), storage_options)
    recorded = recorded_checksums(root, storage_options, fs)
    result = FramesCheck()
    for file in _data_files(frames):
        expected = recorded.get(file.name.removesuffix(".lance"))
        if expected is None:
            result.unrecorded.append(file.name)
            continue
        result.checked += 1
        try:
            data = _read(root, file.name, fs)
        except FileNotFoundError:
            result.problems.append(_damaged(root, file, "the file is missing"))
            continue
        size, digest = expected
        if len(data) != size:
            problem = f"{len(data)} bytes, recorded {size}"
        elif file_checksum(data) != digest:
            problem = f"xxh3_64 of its bytes is {file_checksum(data):016x}, recorded {digest:016x}"
        else:
            continue
        result.problems.append(_damaged(root, file, problem))
    return result


def _damaged(root: str, file: DataFile, problem: str) -> str:
    return f"{frames_uri(root)}: fragment {file.fragment} ({file.rows} rows; data file data/{file.name}) is corrupt: {problem}"


def check_frames_sizes(root: str, frames, storage_options: dict | None = None) -> FramesCheck:
    """The cheap check a read makes: every recorded data file of ``frames`` exists with its
    recorded size (two LISTs, no row data read). A byte changed in place passes; ``verify``
    (``check_frames_files``) finds it."""
    fs = fsspec_filesystem(frames_uri(root), storage_options)
    recorded = recorded_checksums(root, storage_options, fs)
    result = FramesCheck()
    if not recorded:  # written before row checksums: nothing to compare
        result.unrecorded = [f.name for f in _data_files(frames)]
        return result
    sizes = _stored_sizes(root, fs)
    for file in _data_files(frames):
        expected = recorded.get(file.name.removesuffix(".lance"))
        if expected is None:
            result.unrecorded.append(file.name)
            continue
        result.checked += 1
        size = sizes.get(file.name)
        if size is None:
            result.problems.append(_damaged(root, file, "the file is missing"))
        elif size != expected[0]:
            result.problems.append(_damaged(root, file, f"{size} bytes, recorded {expected[0]}"))
    return result


def verify_frames_on_read(root: str, frames, storage_options: dict | None = None) -> None:
    """Raise CorruptRowsError naming the first data file of ``frames`` (a version about to serve
    rows) whose size differs from its recorded size, or that is missing (``check_frames_sizes``)."""
    check = check_frames_sizes(root, frames, storage_options)
    if check.problems:
        more = f" (and {len(check.problems) - 1} more damaged files)" if len(check.problems) > 1 else ""
        raise CorruptRowsError(
            f"{check.problems[0]}{more}, version {frames.version}; re-ingest the episodes it holds or restore the file"
        )
