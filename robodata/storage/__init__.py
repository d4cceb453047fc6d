"""Dataset URIs (a local directory or s3://), storage options and the file systems behind them,
and the complete upload folders under an uploads root (``list_complete_uploads``)."""

from robodata.storage._uploads import list_complete_uploads
from robodata.storage._uris import (
    env_storage_options,
    fsspec_filesystem,
    is_remote,
    join_uri,
    redact,
    safe_uri,
    storage_options_from_env,
)

__all__ = [
    "env_storage_options",
    "fsspec_filesystem",
    "is_remote",
    "join_uri",
    "list_complete_uploads",
    "redact",
    "safe_uri",
    "storage_options_from_env",
]
