"""Find uploads under an uploads root (a local folder or an s3:// prefix) with one listing.

The root is listed once, recursively (on S3 one paginated ListObjectsV2 without a delimiter,
1,000 keys a page), and the files are grouped by their first folder: a folder per upload. This
is what keeps a sensor tick cheap at thousands of uploads: listing each folder on its own costs
one request per upload. A listing can also start after a folder (``after``): the sensor lists
only the tail of the prefix on most ticks (see ``robodata.orchestration._upload_queue``).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
import threading
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import unquote_plus
from xml.etree import ElementTree

import xxhash

from robodata.storage._failures import in_storage_step, storage_call
from robodata.storage._uris import fsspec_filesystem, is_remote

COMPLETE_MARKER = "episode.json"


@dataclass(frozen=True)
class UploadInfo:
    """A complete upload: its episode id, its URI, a fingerprint of its content (it changes
    whenever any file's bytes do, and only then), and when its newest file was written (seconds
    since the epoch)."""

    episode_id: str
    uri: str
    fingerprint: str
    last_write: float = 0.0


@dataclass(frozen=True)
class IncompleteUpload:
    """An upload folder whose ``episode.json`` is not there (yet): still uploading, or stalled."""

    episode_id: str
    uri: str
    last_write: float


@dataclass(frozen=True)
class UploadListing:
    """Everything under an uploads root, from one listing."""

    complete: list[UploadInfo]
    incomplete: list[IncompleteUpload]


def scan_uploads(uploads_root: str, storage_options: dict | None = None, after: str = "") -> UploadListing:
    """Every upload folder directly under ``uploads_root``, complete or not, from one
    recursive listing. Files deeper than the upload folder are not part of an upload.

    With ``after`` (a folder name), only the folders that sort after it in key order
    (``folder_sorts_after``) are listed: on S3 one ListObjectsV2 that starts after that folder's
    keys, so its cost is that of the tail of the listing, not of the whole prefix.

    >>> [u.episode_id for u in scan_uploads("uploads").complete]
    ['episode_000000', 'episode_000001', 'episode_000002']
    """
    root = str(uploads_root).rstrip("/")
    try:
        entries = list_files(root, storage_options, after)
    except FileNotFoundError:
        return UploadListing([], [])
    folders: dict[str, list[dict]] = {}
    for relative, entry in entries:
        parts = relative.split("/")
        if len(parts) == 2 and folder_sorts_after(parts[0], after):
            folders.setdefault(parts[0], []).append(entry)
    return uploads_in(root, folders, storage_options)


def list_files(root: str, storage_options: dict | None = None, after: str = "") -> list[tuple[str, dict]]:
    """(path relative to ``root``, entry) of every file under ``root``, from one recursive
    listing: on S3 one paginated ListObjectsV2 (starting after folder ``after``'s keys), elsewhere
    fsspec's ``find`` (which ignores ``after``: callers filter with ``folder_sorts_after``).

    >>> sorted(name for name, _ in list_files("uploads"))[:2]
    ['episode_000000/episode.json', 'episode_000000/states.parquet']
    """
    if is_remote(root) and root.split("://", 1)[0] in ("s3", "s3a"):
        return _list_s3(root, storage_options, after)
    return _list_fsspec(root, storage_options)


def uploads_in(root: str, files_by_folder: dict[str, list[dict]], storage_options: dict | None = None) -> UploadListing:
    """The upload folders under ``root`` given their listed files: complete once their
    ``episode.json`` is listed, sorted by folder name (``storage_options`` to read files whose
    listing carries no content hash).

    >>> uploads_in("uploads", {})
    UploadListing(complete=[], incomplete=[])
    """
    complete, incomplete = [], []
    fs = None
    for name, files in sorted(files_by_folder.items()):
        uri = posixpath.join(root, name)
        last_write = max(_written_at(f) for f in files)
        if any(posixpath.basename(f["name"]) == COMPLETE_MARKER for f in files):
            if fs is None and not all(f.get("ETag") for f in files):
                fs = fsspec_filesystem(root, storage_options)
            complete.append(UploadInfo(name, uri, _fingerprint(files, fs), last_write))
        else:
            incomplete.append(IncompleteUpload(name, uri, last_write))
    return UploadListing(complete, incomplete)


def folder_sorts_after(folder: str, after: str) -> bool:
    """Whether upload folder ``folder``'s keys sort after every key of folder ``after`` (S3 lists
    keys in byte order, so folder ``a-b`` comes before folder ``a``: ``a-b/`` < ``a/``).

    >>> folder_sorts_after("episode_000010", "episode_000009"), folder_sorts_after("a-b", "a")
    (True, False)
    """
    return not after or folder + "/" > after + "/"


def _list_fsspec(root: str, storage_options: dict | None) -> list[tuple[str, dict]]:
    """(path relative to ``root``, entry) of every file under ``root`` (local disks, other stores)."""
    fs = fsspec_filesystem(root, storage_options)
    listed_root = fs._strip_protocol(root).rstrip("/")
    entries = storage_call("listing uploads", root, storage_options, fs.find, root, detail=True)
    return [
        (name[len(listed_root) :].strip("/"), entry)
        for name, entry in entries.items()
        if entry.get("type") != "directory"
    ]


def _list_s3(root: str, storage_options: dict | None, after: str) -> list[tuple[str, dict]]:
    """One paginated ListObjectsV2 of the prefix ``root`` (no delimiter: one request per 1,000
    keys, not one per folder), starting after folder ``after``'s keys. Each entry carries what
    the fingerprint needs, under the names ``fs.ls`` gives them."""
    fs = fsspec_filesystem(root, storage_options)
    fs.connect()
    fs.s3.meta.events.register("before-parse.s3.ListObjectsV2", _read_listed_keys)
    bucket, key, _ = fs.split_path(root)
    prefix = f"{key}/" if key else ""
    # Every key of folder ``after`` is below ``after + "0"`` ("/" < "0"), and every key of a
    # folder sorting after it is above.
    request = {"Bucket": bucket, "Prefix": prefix}
    if after:
        request["StartAfter"] = f"{prefix}{after}0"
    entries = []
    while True:
        page = fs.call_s3("list_objects_v2", **request)
        for obj in page[_LISTED] if _LISTED in page else page.get("Contents", []):
            if obj["Key"].endswith("/"):
                continue  # a folder marker some tools write, not a file of the upload
            entries.append(
                (
                    obj["Key"][len(prefix) :],
                    {
                        "name": f"{bucket}/{obj['Key']}",
                        "size": obj["Size"],
                        "ETag": obj.get("ETag"),
                        "LastModified": obj["LastModified"],
                    },
                )
            )
        if not page.get("IsTruncated"):
            return entries
        request["ContinuationToken"] = page["NextContinuationToken"]


@in_storage_step("listing uploads")
def list_complete_uploads(uploads_root: str, storage_options: dict | None = None) -> list[UploadInfo]:
    """Every folder directly under ``uploads_root`` whose ``episode.json`` exists, sorted by id.

    >>> [u.episode_id for u in list_complete_uploads("uploads")]
    ['episode_000000', 'episode_000001', 'episode_000002']
    """
    return scan_uploads(uploads_root, storage_options).complete


@in_storage_step("reading the upload's fingerprint")
def upload_fingerprint(upload_uri: str, storage_options: dict | None = None) -> str:
    """The fingerprint ``list_complete_uploads`` reports for the upload folder ``upload_uri``.

    >>> upload_fingerprint("uploads/episode_000000") == list_complete_uploads("uploads")[0].fingerprint
    True
    """
    uri = str(upload_uri).rstrip("/")
    fs = fsspec_filesystem(uri, storage_options)
    return _fingerprint(fs.ls(uri, detail=True), fs)


_LISTED = "RobodataContents"


def _read_listed_keys(response_dict: dict, customized_response_dict: dict, **kwargs) -> None:
    """botocore's ``before-parse`` hook for a ListObjectsV2 page: read each key's name, size,
    ETag and time with ElementTree, and leave botocore only the page's envelope (its modeled
    parser costs ~90 us a key, most of a full listing's CPU at thousands of uploads)."""
    if response_dict.get("status_code") != 200:
        return
    page = ElementTree.fromstring(response_dict["body"])
    ns = page.tag[: page.tag.index("}") + 1] if page.tag.startswith("{") else ""
    url_encoded = page.findtext(f"{ns}EncodingType") == "url"
    listed = []
    for item in page.findall(f"{ns}Contents"):
        key = item.findtext(f"{ns}Key", "")
        listed.append(
            {
                "Key": unquote_plus(key) if url_encoded else key,
                "Size": int(item.findtext(f"{ns}Size", "")),
                "ETag": item.findtext(f"{ns}ETag"),
                "LastModified": datetime.fromisoformat(item.findtext(f"{ns}LastModified", "")),
            }
        )
        page.remove(item)
    response_dict["body"] = ElementTree.tostring(page)
    customized_response_dict[_LISTED] = listed


_NOT_REGULAR = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def local_file_problem(path: str, folder: str) -> str | None:
    """Why the local file ``path`` of the upload folder ``folder`` must not be read, or None.

    Only regular files inside the folder are read: a symbolic link out of it would copy whatever
    it points at (another episode, a file of the host) into the dataset, a named pipe blocks its
    reader until someone writes to it, and a device such as ``/dev/zero`` never ends. Missing
    files and directories are None: the caller names those in its own words.

    >>> local_file_problem("/dev/null", "/dev")
    'is a character device, not a regular file'
    """
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(mode):
        real, home = os.path.realpath(path), os.path.realpath(folder)
        if os.path.commonpath([real, home]) != home:
            return f"is a symbolic link to {real}, outside the upload folder"
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:  # a dangling link: the caller says the file is missing
            return None
        except OSError as exc:  # a loop of links
            return f"is a symbolic link that cannot be followed ({exc.strerror})"
    for is_kind, kind in _NOT_REGULAR:
        if is_kind(mode):
            return f"is {kind}, not a regular file"
    return None


def _fingerprint(files: list[dict], fs=None) -> str:
    """One fingerprint for an upload folder's files, whether they come from listing the folder
    or the whole root (sub-folders are not part of an upload, so directory entries are left out):
    each file's name, size and content hash (its ETag, else its bytes hashed through ``fs``).
    A local file that must not be read (``local_file_problem``: a FIFO, a device, a link out of
    the folder) counts by what it is, unread: the ingest then refuses it by name."""
    digest = hashlib.sha256()
    for f in sorted((f for f in files if f.get("type") != "directory"), key=lambda f: f["name"]):
        content = f.get("ETag") or _unreadable(fs, f) or _content_digest(fs, f)
        digest.update(f"{posixpath.basename(f['name'])}|{f.get('size')}|{content}\n".encode())
    return digest.hexdigest()[:16]


_DIGESTS: dict[tuple, str] = {}  # (name, size, mtime, inode) -> xxh3-128 of the file's bytes
_DIGESTS_LOCK = threading.Lock()
_DIGESTS_MAX = 200_000  # ~40 MB at most; past it the cache starts afresh
_CHUNK = 8 << 20


def _unreadable(fs, entry: dict) -> str | None:
    """``local_file_problem`` of a listed file on a local disk (None elsewhere: object stores
    hold only plain objects)."""
    protocols = (fs.protocol,) if fs is not None and isinstance(fs.protocol, str) else getattr(fs, "protocol", ())
    if not {"file", "local"} & set(protocols):
        return None
    return local_file_problem(entry["name"], posixpath.dirname(entry["name"]))


def _content_digest(fs, entry: dict) -> str:
    """The xxh3-128 of a listed file's bytes, read once per version of the file (its size,
    modification time and inode; a copy that keeps the bytes but not the times is read again
    and found identical)."""
    if fs is None:
        raise ValueError(f"{entry['name']}: no content hash listed and no filesystem to read it with")
    key = (entry["name"], entry.get("size"), entry.get("mtime"), entry.get("ino"), entry.get("created"))
    with _DIGESTS_LOCK:
        known = _DIGESTS.get(key)
    if known is not None:
        return known
    hasher = xxhash.xxh3_128()
    with fs.open(entry["name"], "rb") as f:
        while chunk := f.read(_CHUNK):
            hasher.update(chunk)
    value = hasher.hexdigest()
    with _DIGESTS_LOCK:
        if len(_DIGESTS) >= _DIGESTS_MAX:
            _DIGESTS.clear()
        _DIGESTS[key] = value
    return value


def _written_at(entry: dict) -> float:
    """When a listed file last changed, in seconds since the epoch. On a local disk the inode's
    change time counts too: copy tools (``cp -p``, ``rsync -a``) keep an old mtime."""
    modified = entry.get("LastModified")
    if isinstance(modified, datetime):
        return modified.timestamp()
    return max(float(entry.get("mtime") or 0.0), float(entry.get("created") or 0.0))


__all__ = [
    "IncompleteUpload",
    "UploadInfo",
    "UploadListing",
    "folder_sorts_after",
    "list_complete_uploads",
    "list_files",
    "local_file_problem",
    "scan_uploads",
    "upload_fingerprint",
    "uploads_in",
]
