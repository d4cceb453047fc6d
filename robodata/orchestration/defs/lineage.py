"""What every materialization records: where the dataset is, the Lance versions of both tables
after the write, what was written, the tag if one was made; Dagster's standard keys
(``dagster/uri``, ``dagster/row_count``, ``dagster/column_schema``) for what the asset stands for
(its table, or its own output: a report, a tag); and a data version naming that output
(``gops.lance@N``, ``frames.lance@N``, a report's or a tag's own name)."""

import ast
import hashlib
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa

from robodata.errors import StorageError
from robodata.format._schema import FORMAT_VERSION, FRAMES_TABLE, GOPS_TABLE, REF_SUFFIXES, read_metadata, ref_columns
from robodata.format._tables import open_table
from robodata.format._versions import current_versions
from robodata.orchestration.defs.resources import DatasetStore
from robodata.storage import join_uri
from robodata.storage._failures import storage_call

# Assets that write the dataset produce what this format version says; a new format makes
# every earlier materialization stale.
CODE_VERSION = f"robodata-format-{FORMAT_VERSION}"


def code_version_of(module_file: str, function: str) -> str:
    """The code version of the asset computed by ``function`` of ``module_file`` (pass
    ``__file__``): the storage format's, plus a digest of that function's own code (its
    signature and body as Python parses them: comments, formatting and its docstring do not
    count). Editing one asset marks only its own materializations stale; a new storage format
    marks all of them.

    >>> code_version_of(__file__, "code_version_of")  # doctest: +ELLIPSIS
    'robodata-format-2-...'
    """
    tree = ast.parse(Path(module_file).read_text(encoding="utf-8"))
    [node] = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function]
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    code = ast.dump(node.args) + "".join(ast.dump(statement) for statement in body)
    return f"{CODE_VERSION}-{hashlib.sha256(code.encode()).hexdigest()[:12]}"


def data_version(table: str, version: int | None) -> dg.DataVersion:
    """The data version of an asset whose table (``frames.lance`` / ``gops.lance``) is at
    ``version`` (0: not written yet).

    >>> data_version("gops.lance", 4)
    DataVersion(value='gops.lance@4')
    """
    return dg.DataVersion(f"{table}@{version or 0}")


def lineage_result(
    store: DatasetStore,
    *,
    rows_written: int,
    bytes_written: int,
    frames_version: int | None = None,
    gops_version: int | None = None,
    table: str | None = FRAMES_TABLE,
    row_count: int | None = None,
    output: tuple[str, str] | None = None,
    tag: str | None = None,
    extra: dict | None = None,
) -> dg.MaterializeResult:
    """A MaterializeResult with the lineage metadata; versions not given are read from the store.

    ``table`` is the table the asset stands for (its data version and standard metadata name
    it); ``row_count`` the rows of this materialization (a partition's: one episode's or one
    batch's rows), else the table's at that version. ``output`` (uri, data version) is for an
    asset that stands for something of its own (a report, a tag) rather than a table; with
    neither, the asset keeps Dagster's own data version.
    """
    if frames_version is None or gops_version is None:
        current = current_versions(store.root, storage_options=store.storage_options())
        frames_version = current.frames if frames_version is None else frames_version
        gops_version = current.gops if gops_version is None else gops_version
    metadata = {
        "dataset_uri": store.safe_uri(),
        "frames_version": frames_version,
        "gops_version": gops_version,
        "rows_written": rows_written,
        "bytes_written": bytes_written,
    }
    if tag is not None:
        metadata["tag"] = tag
    own_version = None
    if output is not None:
        uri, own_version = output
        metadata["dagster/uri"] = store.safe_uri(uri)
        if row_count is not None:
            metadata["dagster/row_count"] = row_count
    elif table is not None:
        version = {FRAMES_TABLE: frames_version, GOPS_TABLE: gops_version}[table]
        metadata.update(table_metadata(store, table, version, row_count))
        own_version = data_version(table, version).value
    metadata.update(extra or {})
    return dg.MaterializeResult(
        metadata=metadata, data_version=dg.DataVersion(own_version) if own_version is not None else None
    )


def table_metadata(store: DatasetStore, table: str, version: int | None, row_count: int | None = None) -> dict:
    """Dagster's standard keys for ``table`` at ``version``: where it is, the rows of the
    materialization (``row_count``, else the table's) and (for frames.lance, the table users
    read) its columns."""
    uri = join_uri(store.root, table)
    metadata: dict = {"dagster/uri": store.safe_uri(uri)}
    lance_table = open_table(uri, store.storage_options(), version) if version else None
    if row_count is None:
        counting = f"counting the rows of {table}"
        row_count = (
            storage_call(counting, uri, store.storage_options(), lance_table.count_rows)
            if lance_table is not None
            else 0
        )
    metadata["dagster/row_count"] = row_count
    if lance_table is not None and table == FRAMES_TABLE:
        metadata["dagster/column_schema"] = column_schema(lance_table.schema)
    return metadata


def column_schema(schema: pa.Schema) -> dg.TableSchema:
    """``schema`` as Dagster shows it on the asset page: one column per field, with its Arrow
    type; the columns pointing rows at camera frames say so (readers never see them)."""
    pointers = {
        column: f"internal: points each row at its frame of camera {camera} ({suffix})"
        for camera in read_metadata(schema).cameras
        for column, suffix in zip(ref_columns(camera), REF_SUFFIXES, strict=True)
    }
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name=field.name,
                type=str(field.type),
                description=pointers.get(field.name),
                constraints=dg.TableColumnConstraints(nullable=field.nullable),
            )
            for field in schema
        ]
    )


# The metadata key a failure is classified under, and its values: the sensor gives up at once on a
# run that failed on bad input (the same upload fails the same way every time).
FAILURE_KIND = "failure_kind"
BAD_INPUT = "bad input"
RETRYABLE = "storage (retried)"


def classified_failure(reason: str, metadata: dict[str, Any], *, retryable: bool) -> dg.Failure:
    """The step's failure for ``reason`` (one line), Dagster's public ``dg.Failure``: its
    description is the step's and the run's failure message. A retryable one is retried
    (``retries.storage_retries``); bad input is classified ``bad input`` and not retried (the same
    upload fails the same way every time). Raise it ``from None`` so no chained traceback is kept."""
    kind = RETRYABLE if retryable else BAD_INPUT
    return dg.Failure(description=reason, metadata={**metadata, FAILURE_KIND: kind}, allow_retries=retryable)


def failure(store: DatasetStore, exc: Exception) -> dg.Failure:
    """A Dagster failure whose message is one line naming the file and the problem, credentials
    redacted; an episode audit's failure also lists each check's outcome as metadata. Only a
    transient failure may be retried (``retries.storage_retries``): robodata's StorageError (a
    timeout, a 503, a dropped connection) or a file not found (yet). A bad upload, an
    incompatible episode or a failed audit (robodata's other errors) and anything else the
    asset turns into a failure fail the same way every time, so they fail once, classified
    ``bad input``."""
    audit = getattr(exc, "results", None) or {}
    metadata = {
        f"check {name}": ("passed: " if outcome.passed else "FAILED: ") + store.redact(outcome.description)
        for name, outcome in audit.items()
    }
    retryable = isinstance(exc, (StorageError, FileNotFoundError))
    reason = " ".join(store.redact(str(exc)).split()) or type(exc).__name__
    return classified_failure(reason, metadata, retryable=retryable)


def refused(reason: str) -> dg.Failure:
    """A failure no retry can fix that is not about an upload (the instance is set up for the
    other partitioning): one line, classified like bad input so the sensor does not repeat it."""
    return classified_failure(reason, {}, retryable=False)
