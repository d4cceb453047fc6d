"""annotations: label columns from a file (per row or per episode), added without touching video."""

import dagster as dg
from pydantic import Field

from robodata.edits import add_annotations
from robodata.edits._annotate import KEYS
from robodata.edits._label_files import read_labels
from robodata.orchestration.defs.ingest.episodes import aligned_frames
from robodata.orchestration.defs.interop.imports import imported_episodes
from robodata.orchestration.defs.lineage import code_version_of, failure, lineage_result
from robodata.orchestration.defs.resources import DatasetStore


class AnnotationsConfig(dg.Config):
    labels_path: str = Field(
        description="Parquet, CSV or JSON-lines file (local or s3://) with episode_index, optional "
        "frame_index, and one column per label. Without frame_index a label covers its whole episode."
    )


@dg.asset(
    deps=[aligned_frames, imported_episodes],
    group_name="labels",
    code_version=code_version_of(__file__, "annotations"),
    kinds={"lance"},
    description="Adds or corrects label columns in frames.lance; GOPs are never rewritten.",
)
def annotations(
    context: dg.AssetExecutionContext, config: AnnotationsConfig, store: DatasetStore
) -> dg.MaterializeResult:
    options = store.storage_options()
    try:
        labels = read_labels(config.labels_path, store.root, storage_options=options)
        result = add_annotations(store.root, labels, storage_options=options)
    except (ValueError, FileNotFoundError) as exc:
        raise failure(store, exc) from None
    if result.unmatched_rows:  # reported, never dropped in silence
        context.log.warning(store.redact(f"{config.labels_path}: {result.describe()}"))
    return lineage_result(
        store,
        rows_written=result.labelled_rows,
        bytes_written=labels.nbytes,
        frames_version=result.version,
        extra={
            "labels_file": store.safe_uri(config.labels_path),
            "label_columns": ", ".join(c for c in labels.column_names if c not in KEYS),
            "unmatched_label_rows": result.unmatched_rows,
            "unmatched_episodes": ", ".join(map(str, result.unmatched_episodes)),
        },
    )


defs = dg.Definitions(assets=[annotations])
