"""Lance's raw messages, told as what happened: a full disk, a damaged manifest, a missing data
file, each naming the table; never Lance's protobuf wording or the source paths of Lance's build
machine (``/home/runner/work/lance/...rs:172:20``).

>>> str(explain(OSError("LanceError(IO): file size is too small, /home/runner/work/lance/lance/rust/lance-io/src/utils.rs:172:20"), "ds/gops.lance", "opening the table"))
'ds/gops.lance: the table is damaged: its manifest cannot be read while opening the table (file size is too small); restore the table from a backup or a replica'
>>> str(explain(OSError("Dataset at path ds/gops.lance/_versions/18446744073709551613.manifest was not found: Not found: "
...     "ds/gops.lance/_versions/18446744073709551613.manifest, /home/runner/work/lance/x.rs:1:2"), "ds/gops.lance", "reading GOP ids"))
'ds/gops.lance: version 2 of the table was removed while reading GOP ids (a version cleanup, `robodata compact --older-than`, ran meanwhile); run it again on the versions listed now'
>>> str(explain(OSError("Invalid range 0..2269 for object of size 1370 bytes"), "ds/frames.lance", "reading rows"))[:74]
'ds/frames.lance: a file of the table (data or index) is damaged while read'
"""

from __future__ import annotations

import errno
import re

from robodata.errors import DamagedFileError, StorageError

# Where Lance's messages point into its own source: ", /home/runner/work/lance/.../x.rs:12:34".
_SOURCE_PATH = re.compile(r",?\s*(?:/home/runner/work/\S+|/rustc/\S+|\S+\.rs:\d+:\d+)")
_LANCE_PREFIX = re.compile(r"^(?:LanceError\(\w+\):\s*|External error:\s*|Generic \w+ error:\s*)+")
# Lance's plea on an internal error: the cause here is a damaged file, not a bug to report.
_BUG_REPORT = re.compile(r"Encountered internal error\. Please file a bug report at \S+\s*")
_NOT_FOUND = re.compile(r"Not found: (\S+?)(?:,|\s|$)")
# A version's manifest: _versions/<n>.manifest (n = u64::MAX - version in Lance's newer naming).
_MANIFEST = re.compile(r"_versions/(\d+)\.manifest$")
# The HTTP status of an error the store answered with ("... non-2xx status code: 403 Forbidden: ...").
ANSWER_STATUS = re.compile(r"non-2xx status code: (\d{3}(?: [A-Za-z ]+)?)")
_NO_SPACE = ("No space left on device", "os error 28")
# A data file cut short, or another file in its place (Lance reads its footer at the offsets the
# manifest gives; a swapped file has another size and another layout).
_DAMAGED_DATA = (
    "failed to fill whole buffer",
    "does not appear to be a Lance file",
    "invalid magic",
    "out of range for slice",
    "range end index",
)
# A file shorter than the manifest says (a data or index file cut short): local object_store's
# words, which read like a failed request but are not one.
_SHORT_FILE = re.compile(r"Invalid range \d+\.\.\d+ for object of size \d+")
# An index whose row ids no longer match the table (its bytes changed).
_DAMAGED_INDEX = ("row-id sequence has no entry",)
# A manifest (or a file's footer) that is cut short or does not decode.
_DAMAGED = (
    "file size is too small",
    "failed to decode",
    "DecodeError",
    "invalid wire type",
    "buffer underflow",
    "unexpected end of file",
    "Invalid protobuf",
    "invalid tag value",
    "magic number does not match",
)
# Lance's wording for any file it found corrupt (a RuntimeError, not an OSError).
CORRUPT_FILE = "Encountered corrupt file"


def is_corrupt_file(exc: BaseException) -> bool:
    """Whether ``exc`` is Lance saying a file of the table is corrupt (it raises a RuntimeError)."""
    return isinstance(exc, RuntimeError) and CORRUPT_FILE in str(exc)


def without_source_paths(text: str) -> str:
    """``text`` without Lance's source locations and error-kind prefixes."""
    text = _BUG_REPORT.sub("", _SOURCE_PATH.sub("", text))
    return _LANCE_PREFIX.sub("", text).strip()


def table_of(path: str, default: str) -> str:
    """The ``*.lance`` table a file path lies in (``default`` when it lies in none)."""
    found = re.search(r"^(.*?\.lance)(?:/|$)", path)
    return found.group(1) if found else default


def is_missing_table(exc: BaseException) -> bool:
    """Whether Lance's ``exc`` says the table (or the version or tag asked for) is not there. A
    request the store refused is not a missing table, although its answer may read "does not
    exist" (S3's ``InvalidAccessKeyId``: "The AWS Access Key Id you provided does not exist in
    our records"); a 404 answer (no such bucket) is.

    >>> is_missing_table(ValueError("Dataset at path ds/frames.lance was not found: Not found: ds/frames.lance/_versions"))
    True
    >>> is_missing_table(ValueError("Ref not found error: tag nightly does not exist"))
    True
    >>> is_missing_table(ValueError("... non-2xx status code: 403 Forbidden: <?xml ...><Message>The AWS Access Key Id you provided does not exist in our records.</Message>"))
    False
    """
    text = str(exc)
    status = ANSWER_STATUS.search(text)
    if status is not None and not status.group(1).startswith("404"):
        return False
    return "not found" in text.lower() or "does not exist" in text.lower()


def damaged_data_files(table_uri: str, storage_options: dict | None = None) -> list[str]:
    """The data files of the table's newest version whose stored size differs from the size its
    manifest recorded when they were written (cut short, extended, or another file in their
    place), each as "<uri> (<stored> bytes, written <size>)"; empty when none differs or the
    table cannot be read to tell.

    >>> damaged_data_files("data/demo/gops.lance")
    []
    """
    import lance

    from robodata.storage._deadlines import call_with_deadline, lance_options
    from robodata.storage._uris import fsspec_filesystem, join_uri

    folder = join_uri(table_uri, "data")
    try:
        options = lance_options(table_uri, storage_options)
        table = call_with_deadline(table_uri, storage_options, lance.dataset, table_uri, storage_options=options)
        written = {f.path: f.file_size_bytes for fragment in table.get_fragments() for f in fragment.metadata.files}
        fs = fsspec_filesystem(folder, storage_options)
        listing = call_with_deadline(folder, storage_options, fs.ls, folder, detail=True)
    except Exception:  # only ever called to word an error: the error itself is what is raised
        return []
    stored = {str(entry["name"]).rsplit("/", 1)[-1]: int(entry["size"]) for entry in listing}
    return [
        f"{join_uri(folder, name)} ({stored[name]} bytes, written {size})"
        for name, size in sorted(written.items())
        if size and name in stored and stored[name] != size
    ]


def _damaged_data(text: str, table_uri: str, action: str, storage_options: dict | None) -> DamagedFileError:
    """A file of the table that Lance cannot decode, named when it is a data file whose size gives
    it away."""
    detail = without_source_paths(text)
    found = damaged_data_files(table_uri, storage_options) if table_uri.rstrip("/").endswith(".lance") else []
    if not found:
        return DamagedFileError(
            f"{table_uri}: a file of the table (data or index) is damaged while {action} ({detail}); `robodata verify` "
            "checks every file; restore the table from a copy (a backup or a replica)"
        )
    more = f" (and {len(found) - 1} more damaged data files)" if len(found) > 1 else ""
    return DamagedFileError(
        f"{table_uri}: data file {found[0]} is damaged{more} while {action} ({detail}); "
        "restore it from a copy (a backup or a replica)"
    )


def explain(
    exc: BaseException, table_uri: str, action: str, storage_options: dict | None = None
) -> StorageError | None:
    """A StorageError saying what Lance's ``exc`` means for ``table_uri``, or None when ``exc``
    is none of the failures named here. A damaged data file is named (``damaged_data_files``)."""
    text = str(exc)
    if getattr(exc, "errno", None) == errno.ENOSPC or any(m in text for m in _NO_SPACE):
        where = getattr(exc, "filename", None) or table_uri
        return StorageError(
            f"{table_uri}: no space left on the device holding {where} while {action}; free some space and run it again"
        )
    missing = _NOT_FOUND.search(text)
    removed = _MANIFEST.search(missing.group(1)) if missing else None
    if removed is not None:
        number = int(removed.group(1))
        version = number if number < 2**63 else 2**64 - 1 - number  # Lance's two manifest namings
        return StorageError(
            f"{table_uri}: version {version} of the table was removed while {action} (a version cleanup, "
            "`robodata compact --older-than`, ran meanwhile); run it again on the versions listed now"
        )
    if missing and (missing.group(1).endswith(".lance") or "/data/" in missing.group(1)):
        path = missing.group(1)
        path = path if path.startswith(("/", "s3://")) or "://" in table_uri else "/" + path
        return StorageError(
            f"{table_of(path, table_uri)}: data file {path} is missing (deleted or never fully written) "
            f"while {action}; restore it from a backup or a replica"
        )
    if _SHORT_FILE.search(text) or any(m in text for m in _DAMAGED_INDEX):
        return _damaged_data(text, table_uri, action, storage_options)
    reading_a_version = "opening" in action or "_versions/" in text or "manifest" in text.lower()
    if any(m in text for m in _DAMAGED_DATA) or (any(m in text for m in _DAMAGED) and not reading_a_version):
        return _damaged_data(text, table_uri, action, storage_options)
    if any(m in text for m in _DAMAGED):
        return DamagedFileError(
            f"{table_uri}: the table is damaged: its manifest cannot be read while {action} "
            f"({without_source_paths(text)}); restore the table from a backup or a replica"
        )
    return None
