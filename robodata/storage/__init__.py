"""Dataset URIs (a local directory or s3://), storage options and the file systems behind them."""

from robodata.storage.uris import (
    fsspec_filesystem,
    is_remote,
    join_uri,
    redact,
    storage_options_from_env,
)

__all__ = ["fsspec_filesystem", "is_remote", "join_uri", "redact", "storage_options_from_env"]
