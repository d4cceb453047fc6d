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
(``record_frames_checksums``); a file a crash left unrecorded still opens (reads say nothing,
``verify`` notes it) and is recorded by the next writer.

What is checked where: ``robodata verify`` (``check_frames_files``) reads every data file of the
version and compares its bytes. Opening a dataset (``verify_frames_on_read``) reads no row data:
one LIST of the checksums and one LIST of ``frames.lance/data/`` compare each recorded file's
size with the stored file's (a truncated, extended or missing file is refused). The first read
of rows in a process (``verify_frames_bytes``: the row index, ``to_table``, ``episodes``, a
``take``) compares the bytes of every data file of the version not yet checked in this process,
each file once per process (immutable files: once checked, always right); a process that adopts
a row index another process shared adopts that process's check with it. That first read scans
every fragment for the row index anyway: on a 10-episode dataset (1,970 rows, 10 data files,
339 KB) reading and hashing every file took 0.4 ms beside 2.9 ms for the row index
(docs/reliability.md). So opening a large remote dataset in every training worker costs two
listings, and a byte flipped anywhere in frames.lance is refused before a row is served.

Each call builds one file system and uses it for all its requests: a new s3fs instance per
request builds a new botocore client on fsspec's single event-loop thread (loading its JSON
models there), which serialised every s3fs call of the process behind client construction and
left unclosed clients behind; two racing writers recording checksums stalled on it.

"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

import xxhash

from robodata.errors import CorruptRowsError
from robodata.format._tables import frames_uri, open_table
from robodata.storage import fsspec_filesystem, is_remote, join_uri
from robodata.storage._deadlines import call_with_deadline

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
        names = [p.rsplit("/", 1)[-1] for p in call_with_deadline(folder, storage_options, fs.ls, folder, detail=False)]
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
    first_row: int = 0  # the position of the fragment's first live row in the version

    def describe(self) -> str:
        last = self.first_row + self.rows - 1
        return f"fragment {self.fragment} (rows {self.first_row}-{last}; data file data/{self.name})"


def _data_files(frames) -> list[DataFile]:
    """Every data file of ``frames``' version, from its manifest (already read: no request)."""
    files, first = [], 0
    for fragment in frames.get_fragments():
        meta = fragment.metadata
        rows = meta.physical_rows - (meta.deletion_file.num_deleted_rows if meta.deletion_file else 0)
        files += [DataFile(fragment.fragment_id, f.path.rsplit("/", 1)[-1], rows, first) for f in fragment.data_files()]
        first += rows
    return files


def _file_bytes(root: str, name: str, fs: Any, storage_options: dict | None) -> bytes:
    path = join_uri(frames_uri(root), "data", name)
    return call_with_deadline(path, storage_options, fs.cat_file, path)


def _stored_sizes(root: str, fs: Any, storage_options: dict | None) -> dict[str, int]:
    """data file name -> size of every file in frames.lance/data/ (one LIST)."""
    folder = join_uri(frames_uri(root), "data")
    try:
        entries = call_with_deadline(folder, storage_options, fs.ls, folder, detail=True)
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
    if missing and not is_remote(folder):
        fs.makedirs(folder, exist_ok=True)
    for file in missing:
        data = _file_bytes(root, file.name, fs, storage_options)
        checksum = join_uri(folder, f"{file.name.removesuffix('.lance')}.{len(data)}.{file_checksum(data):016x}")
        call_with_deadline(checksum, storage_options, fs.pipe_file, checksum, b"")
    return len(missing)


@dataclass
class FramesCheck:
    """What ``check_frames_files`` found in one version of frames.lance."""

    checked: int = 0
    unrecorded: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def check_frames_files(
    root: str, frames, storage_options: dict | None = None, files: list[DataFile] | None = None
) -> FramesCheck:
    """Compare every data file of ``frames`` (an opened version of frames.lance), or only
    ``files`` of it, with its recorded checksum; files without one are listed as unrecorded,
    not failed."""
    fs = fsspec_filesystem(frames_uri(root), storage_options)
    recorded = recorded_checksums(root, storage_options, fs)
    result = FramesCheck()
    for file in _data_files(frames) if files is None else files:
        expected = recorded.get(file.name.removesuffix(".lance"))
        if expected is None:
            result.unrecorded.append(file.name)
            continue
        result.checked += 1
        try:
            data = _file_bytes(root, file.name, fs, storage_options)
        except FileNotFoundError:
            result.problems.append(_missing(root, file))
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
    return f"{frames_uri(root)}: {file.describe()} is corrupt: {problem}"


def _missing(root: str, file: DataFile) -> str:
    # Worded as robodata.storage._lance_errors words a missing data file Lance ran into.
    table = frames_uri(root)
    last = file.first_row + file.rows - 1
    return (
        f"{table}: data file {join_uri(table, 'data', file.name)} is missing (deleted or never fully written): "
        f"fragment {file.fragment}, rows {file.first_row}-{last}"
    )


def check_frames_sizes(root: str, frames, storage_options: dict | None = None) -> FramesCheck:
    """The cheap check a read makes: every recorded data file of ``frames`` exists with its
    recorded size (two LISTs, no row data read). A byte changed in place passes; ``verify``
    (``check_frames_files``) finds it."""
    fs = fsspec_filesystem(frames_uri(root), storage_options)
    recorded = recorded_checksums(root, storage_options, fs)
    result = FramesCheck()
    sizes = _stored_sizes(root, fs, storage_options)
    for file in _data_files(frames):
        expected = recorded.get(file.name.removesuffix(".lance"))
        if expected is None:
            result.unrecorded.append(file.name)
            continue
        result.checked += 1
        size = sizes.get(file.name)
        if size is None:
            result.problems.append(_missing(root, file))
        elif size != expected[0]:
            result.problems.append(_damaged(root, file, f"{size} bytes, recorded {expected[0]}"))
    return result


def verify_frames_on_read(root: str, frames, storage_options: dict | None = None) -> None:
    """Raise CorruptRowsError naming the first data file of ``frames`` (a version about to serve
    rows) whose size differs from its recorded size, or that is missing (``check_frames_sizes``)."""
    _raise_first(check_frames_sizes(root, frames, storage_options), frames)


# Data files whose bytes this process compared with their checksums: (frames.lance URI, name).
_checked: set[tuple[str, str]] = set()
_checking = threading.Lock()  # one check at a time; readers of checked files never wait for it
os.register_at_fork(after_in_child=lambda: globals().update(_checking=threading.Lock()))


def verify_frames_bytes(root: str, frames, storage_options: dict | None = None) -> None:
    """Raise CorruptRowsError naming the first data file of ``frames`` whose bytes differ from
    its recorded checksum (table, fragment, its rows and the file). Each file is read and hashed
    once per process, by the first read that needs it; later calls cost a set lookup.

    >>> frames = robodata.open("data/demo").lance_dataset
    >>> verify_frames_bytes("data/demo", frames)  # checked once; every later read skips it
    """
    table = frames_uri(root)
    files = _data_files(frames)
    if all((table, f.name) in _checked for f in files):
        return
    with _checking:
        todo = [f for f in files if (table, f.name) not in _checked]
        if todo:
            _raise_first(check_frames_files(root, frames, storage_options, todo), frames)
            _checked.update((table, f.name) for f in todo)


def adopt_frames_check(root: str, frames) -> None:
    """Count every data file of ``frames`` as checked in this process: another process (the one
    that built and shared the row index this one adopts) compared their bytes."""
    with _checking:
        _checked.update((frames_uri(root), f.name) for f in _data_files(frames))


def _raise_first(check: FramesCheck, frames) -> None:
    if check.problems:
        more = f" (and {len(check.problems) - 1} more damaged files)" if len(check.problems) > 1 else ""
        raise CorruptRowsError(
            f"{check.problems[0]}{more}, version {frames.version}; re-ingest the episodes it holds or restore the file"
        )
