"""training_snapshot: name the current dataset version after a training run, in Lance."""

import dagster as dg
from pydantic import Field

from robodata.format._schema import FRAMES_TABLE
from robodata.format._tables import frames_uri
from robodata.orchestration.defs.ingest.episodes import aligned_frames
from robodata.orchestration.defs.interop.imports import imported_episodes
from robodata.orchestration.defs.labels.annotations import annotations
from robodata.orchestration.defs.lineage import code_version_of, failure, lineage_result
from robodata.orchestration.defs.resources import DatasetStore
from robodata.reader import open_dataset
from robodata.storage import join_uri


class TrainingSnapshotConfig(dg.Config):
    run_name: str = Field(description="The training run's name; becomes a Lance tag on frames.lance.")


@dg.asset(
    deps=[aligned_frames, imported_episodes, annotations],
    group_name="training",
    code_version=code_version_of(__file__, "training_snapshot"),
    kinds={"lance"},
    description="Tags the current dataset version with a training run's name: robodata.open(uri, "
    "version=<run name>) later returns exactly the rows and frames that run saw.",
)
def training_snapshot(config: TrainingSnapshotConfig, store: DatasetStore) -> dg.MaterializeResult:
    options = store.storage_options()
    ds = open_dataset(store.root, storage_options=options)
    try:
        version = ds.tag(config.run_name)
    except ValueError as exc:
        raise failure(store, exc) from None
    # The asset stands for the tag (a Lance tag is a small file in the table's _refs/tags/), not
    # for frames.lance itself: its URI is the tag's, its data version names the tag and the version.
    tag_uri = join_uri(frames_uri(store.root), "_refs", "tags", f"{config.run_name}.json")
    return lineage_result(
        store,
        rows_written=0,
        bytes_written=0,
        frames_version=version,
        row_count=len(ds),
        output=(tag_uri, f"{config.run_name}={FRAMES_TABLE}@{version}"),
        tag=config.run_name,
        extra={"rows": len(ds), "episodes": ds.episodes().num_rows},
    )


defs = dg.Definitions(assets=[training_snapshot])
