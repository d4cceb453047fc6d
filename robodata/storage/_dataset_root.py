"""Before a dataset is created: is its root somewhere a dataset can live?

Reading treats "nothing there" as an empty dataset, so a typo in a bucket name or an endpoint
that answers 404 to everything (not an S3 server at all) would otherwise look like a fresh,
empty dataset and fail later, deep in a write, with the store's raw answer."""

from __future__ import annotations

from pathlib import Path

from robodata.errors import DatasetLocationError
from robodata.storage._deadlines import call_with_deadline
from robodata.storage._failures import is_storage_failure, storage_step
from robodata.storage._uris import canonical_options, fsspec_filesystem, is_remote, redact

# (endpoint, bucket, access key id) known to exist for that identity: other credentials may be refused.
_checked: set[tuple[str, str, str]] = set()


def check_dataset_location(uri: str, storage_options: dict | None = None) -> None:
    """Raise DatasetLocationError if ``uri`` cannot hold a dataset: a local path that is (or
    lies under) a file, or an s3:// bucket the endpoint does not have.

    >>> check_dataset_location("uploads/episode_000000/episode.json/ds")
    Traceback (most recent call last):
    robodata.errors.DatasetLocationError: uploads/episode_000000/episode.json/ds: uploads/episode_000000/episode.json is a file; a dataset root must be a folder
    """
    uri = str(uri)
    if not is_remote(uri):
        path = Path(uri.removeprefix("file://"))
        for folder in [path, *path.parents]:
            if folder.exists():
                if not folder.is_dir():
                    raise DatasetLocationError(f"{uri}: {folder} is a file; a dataset root must be a folder")
                return
        return
    protocol, rest = uri.split("://", 1)
    if protocol not in ("s3", "s3a"):
        return
    bucket = rest.split("/", 1)[0]
    named = canonical_options(storage_options)
    endpoint = named.get("aws_endpoint") or "AWS S3"
    checked = (endpoint, bucket, str(named.get("aws_access_key_id") or ""))
    if checked in _checked:
        return
    fs = fsspec_filesystem(uri, storage_options)
    try:
        # Under the deadline: a store that does not answer this fails the write here, once,
        # rather than again at every step after it.
        call_with_deadline(uri, storage_options, fs.info, bucket)
    except FileNotFoundError:
        raise DatasetLocationError(
            f"{uri}: bucket {bucket!r} does not exist at {endpoint} (or the endpoint is not an S3 "
            "server); check the bucket name and AWS_ENDPOINT_URL. Nothing was written"
        ) from None
    except PermissionError as exc:
        message = (
            f"{uri}: access to bucket {bucket!r} at {endpoint} was denied ({exc}); check the credentials "
            "and the bucket policy. Nothing was written"
        )
        raise DatasetLocationError(redact(" ".join(message.split()), storage_options)) from None
    except Exception as exc:
        if is_storage_failure(exc):  # no answer: said once, here, as every step says it
            with storage_step("checking the bucket", uri, storage_options):
                raise
        return  # anything else the store answered: the write itself reports it
    _checked.add(checked)
