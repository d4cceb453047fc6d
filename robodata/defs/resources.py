"""The dataset store every asset writes to: where the dataset and the uploads live, and the
storage options (credentials) to reach them, which never appear in logs or metadata."""

import os
import posixpath
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import dagster as dg
from pydantic import Field, model_validator

from robodata.format.ids import validate_episode_id
from robodata.storage import is_remote, join_uri, redact, storage_options_from_env
from robodata.storage.deadlines import TIMEOUT_OPTION


def default_root() -> str:
    """``$ROBODATA_ROOT``, else ``<cwd>/demo/dataset`` (where ``robodata demo`` writes)."""
    return os.environ.get("ROBODATA_ROOT") or str(Path.cwd() / "demo" / "dataset")


def default_uploads_root(root: str) -> str:
    """``$ROBODATA_UPLOADS``, else ``uploads`` next to the dataset root: ``s3://b/p/dataset``
    takes uploads from ``s3://b/p/uploads/``, ``demo/dataset`` from ``demo/uploads/``."""
    if os.environ.get("ROBODATA_UPLOADS"):
        return os.environ["ROBODATA_UPLOADS"]
    if is_remote(root):
        return posixpath.join(posixpath.dirname(root.rstrip("/")), "uploads")
    return str(Path(root).parent / "uploads")


class DatasetStore(dg.ConfigurableResource):
    """A robodata dataset (local directory or s3://) and the uploads folder feeding it.

    >>> DatasetStore(root="s3://lab/robodata/dataset").uploads_root
    's3://lab/robodata/uploads'
    """

    root: str = Field(
        default_factory=default_root,
        description="Dataset root URI: a local directory or s3://bucket/prefix. "
        "Default: $ROBODATA_ROOT, else <cwd>/demo/dataset.",
    )
    uploads_root: str = Field(
        default="",
        description="Folder or s3:// prefix holding one upload folder per episode. "
        "Default: $ROBODATA_UPLOADS, else 'uploads' next to the dataset root.",
    )
    storage_timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="Deadline in seconds of each storage call; past it a step fails with StorageUnreachableError. "
        "Default: $ROBODATA_STORAGE_TIMEOUT_S, else 60.",
    )

    @model_validator(mode="after")
    def _derive_uploads_root(self) -> "DatasetStore":
        if not self.uploads_root:
            # The resource is frozen; filling a derived default once at construction is safe.
            object.__setattr__(self, "uploads_root", default_uploads_root(self.root))
        return self

    def storage_options(self) -> dict[str, str] | None:
        """Lance storage options from the AWS_* environment variables (None for none), with the
        storage deadline when one is configured. Never log them."""
        options = storage_options_from_env()
        if self.storage_timeout_s is not None:
            options[TIMEOUT_OPTION] = f"{self.storage_timeout_s:g}"
        return options or None

    def safe_uri(self, uri: str | None = None) -> str:
        """``uri`` (default: the dataset root) without user info, query string or any credential."""
        uri = self.root if uri is None else uri
        parts = urlsplit(uri)
        if parts.scheme and is_remote(uri):
            uri = urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))
        return self.redact(uri)

    def redact(self, text: str) -> str:
        """``text`` with every credential replaced by ``***``: apply to anything shown to a person."""
        return redact(text, self.storage_options())

    def upload_uri(self, episode_id: str) -> str:
        """The upload folder of ``episode_id`` (a partition key)."""
        return join_uri(self.uploads_root, validate_episode_id(episode_id))


defs = dg.Definitions(resources={"store": DatasetStore()})
