"""The dataset store every asset writes to: where the dataset and the uploads live, and the
storage options (credentials) to reach them, which never appear in logs or metadata."""

import os
import posixpath
from pathlib import Path

import dagster as dg
from pydantic import Field, model_validator

from robodata.format._ids import validate_episode_id
from robodata.orchestration._upload_queue import UploadSensorSettings
from robodata.storage import env_storage_options, is_remote, join_uri, redact, safe_uri
from robodata.storage._deadlines import TIMEOUT_OPTION

ROOT_ENV = "ROBODATA_ROOT"
UPLOADS_ENV = "ROBODATA_UPLOADS"
PARTITIONING_ENV = "ROBODATA_PARTITIONING"
PER_EPISODE = "episode"  # one partition (and run) per upload folder <uploads>/<episode_id>/
PER_BATCH = "batch"  # one partition (and run) per upload batch folder <uploads>/<batch>/<episode_id>/
# The dynamic partitions each partitioning keeps in the instance.
PARTITIONS_OF = {PER_EPISODE: "episodes", PER_BATCH: "upload_batches"}
MIGRATE_COMMAND = "robodata repartition"
SENSOR_INTERVAL_ENV = "ROBODATA_SENSOR_INTERVAL_S"


def default_root() -> str:
    """``$ROBODATA_ROOT``, else ``<cwd>/demo/dataset`` (where ``robodata demo`` writes)."""
    return os.environ.get(ROOT_ENV) or str(Path.cwd() / "demo" / "dataset")


def default_uploads_root(root: str) -> str:
    """``$ROBODATA_UPLOADS``, else ``uploads`` next to the dataset root: ``s3://b/p/dataset``
    takes uploads from ``s3://b/p/uploads/``, ``demo/dataset`` from ``demo/uploads/``."""
    if os.environ.get(UPLOADS_ENV):
        return os.environ[UPLOADS_ENV]
    if is_remote(root):
        return posixpath.join(posixpath.dirname(root.rstrip("/")), "uploads")
    return str(Path(root).parent / "uploads")


def sensor_interval_s() -> int:
    """Seconds between two ticks of the upload sensor, from ``$ROBODATA_SENSOR_INTERVAL_S``
    (default 30). Read when the code location loads; a shorter interval picks uploads up sooner
    and lists the uploads root more often (the cluster tests use 5).

    >>> sensor_interval_s()  # with ROBODATA_SENSOR_INTERVAL_S unset
    30
    """
    value = os.environ.get(SENSOR_INTERVAL_ENV, "").strip() or "30"
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{SENSOR_INTERVAL_ENV}={value!r}: give a whole number of seconds, at least 1")
    return int(value)


def partitioning() -> str:
    """How uploads become Dagster partitions, from ``$ROBODATA_PARTITIONING``: ``episode`` (the
    default: one partition and one run per upload) or ``batch`` (one per upload batch folder, for
    deployments past ~50,000 episodes; see docs/cluster.md, "Scale"). Read when the code location loads,
    because a partitions definition is fixed for the life of the location.

    >>> partitioning()  # with ROBODATA_PARTITIONING unset
    'episode'
    """
    value = os.environ.get(PARTITIONING_ENV, "").strip().lower() or PER_EPISODE
    if value not in (PER_EPISODE, PER_BATCH):
        raise ValueError(
            f"{PARTITIONING_ENV}={value!r}: use '{PER_EPISODE}' (one partition per upload folder) "
            f"or '{PER_BATCH}' (one partition per upload batch folder)"
        )
    return value


def with_partitioning(mode: str, definitions: dg.Definitions) -> object:
    """``definitions`` (one partitioning's ingestion: ``defs/ingest/`` per episode,
    ``defs/batches/`` per batch) as a module's ``defs``, built only when the code location loads
    with partitioning ``mode``: a ``@dg.definitions`` function, which Dagster's defs-folder loading
    calls when it builds the location. Both partitionings define the same asset keys, so the
    other one's definitions are left out.

    >>> defs = with_partitioning(PER_BATCH, dg.Definitions(jobs=[]))
    >>> defs().jobs  # with ROBODATA_PARTITIONING unset: per episode, so nothing of the batches
    """

    @dg.definitions
    def defs() -> dg.Definitions:
        return definitions if partitioning() == mode else dg.Definitions()

    return defs


def partitioning_refusal(instance: dg.DagsterInstance, mode: str | None = None) -> str:
    """Why the instance cannot run in partitioning ``mode`` (default: this location's), or ``""``.

    Both partitionings use the same asset keys, so a switch would leave the other one's
    partitions, and their history, orphaned: it is refused until ``robodata
    repartition`` has carried the instance over.

    >>> partitioning_refusal(dg.DagsterInstance.ephemeral())
    ''
    """
    mode = mode or partitioning()
    other = PER_BATCH if mode == PER_EPISODE else PER_EPISODE
    held = instance.get_dynamic_partitions(PARTITIONS_OF[other])
    if not held:
        return ""
    return (
        f"{PARTITIONING_ENV}={mode}, but this Dagster instance holds {len(held)} '{PARTITIONS_OF[other]}' "
        f"partitions of {PARTITIONING_ENV}={other}: run `{MIGRATE_COMMAND} {mode}` first (it carries what "
        f"is ingested over to '{PARTITIONS_OF[mode]}' partitions), or set {PARTITIONING_ENV}={other} again"
    )


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
        if not self.uploads_root and not isinstance(self.root, dg.EnvVar):
            # The resource is frozen; filling a derived default once at construction is safe.
            object.__setattr__(self, "uploads_root", default_uploads_root(self.root))
        return self

    def storage_options(self) -> dict[str, str] | None:
        """Lance storage options from the AWS_* environment variables (None for none), with the
        storage deadline when one is configured. Never log them."""
        options = env_storage_options() or {}
        if self.storage_timeout_s is not None:
            options[TIMEOUT_OPTION] = f"{self.storage_timeout_s:g}"
        return options or None

    def safe_uri(self, uri: str | None = None) -> str:
        """``uri`` (default: the dataset root) without user info, query string or any credential."""
        return safe_uri(self.root if uri is None else uri, self.storage_options())

    def redact(self, text: str) -> str:
        """``text`` with every credential replaced by ``***``: apply to anything shown to a person."""
        return redact(text, self.storage_options())

    def upload_uri(self, episode_id: str) -> str:
        """The upload folder of ``episode_id`` (a partition key)."""
        return join_uri(self.uploads_root, validate_episode_id(episode_id))

    def batch_uri(self, batch_id: str) -> str:
        """The folder of upload batch ``batch_id`` (a partition key in batch partitioning): it
        holds one upload folder per episode. Batch ids follow the episode-id rules.

        >>> DatasetStore(root="s3://lab/robodata/dataset").batch_uri("2026-12-01")
        's3://lab/robodata/uploads/2026-12-01'
        """
        return join_uri(self.uploads_root, validate_episode_id(batch_id))


def store_from_env() -> DatasetStore:
    """The store Dagster runs with. A field the environment sets is bound to its variable
    (``dg.EnvVar``), so the UI shows where the data lives by name; an unset one shows the path
    used. Credentials stay in the AWS_* variables and are never a field.

    >>> from pathlib import Path
    >>> store_from_env().root == str(Path.cwd() / "demo" / "dataset")  # ROBODATA_ROOT unset
    True
    """
    root = default_root()
    uploads = dg.EnvVar(UPLOADS_ENV) if os.environ.get(UPLOADS_ENV) else default_uploads_root(root)
    return DatasetStore(root=dg.EnvVar(ROOT_ENV) if os.environ.get(ROOT_ENV) else root, uploads_root=uploads)


# The upload sensor's settings (either partitioning's sensor) are its resource, with their defaults.
defs = dg.Definitions(resources={"store": store_from_env(), "upload_sensor_settings": UploadSensorSettings()})
