"""benchmark_report: the read-path benchmark on the current dataset version, as a table."""

import dagster as dg
from pydantic import Field

from robodata.bench.readpath import measure_readpath
from robodata.bench.report_markdown import figures_markdown, write_report
from robodata.defs.episodes import aligned_frames
from robodata.defs.lineage import lineage_result
from robodata.defs.resources import DatasetStore
from robodata.reader import open_dataset


class BenchmarkConfig(dg.Config):
    samples: int = Field(default=200, description="Random rows read per measurement.")
    batch_size: int = Field(default=16, description="Rows per batched read.")


@dg.asset(
    deps=[aligned_frames],
    group_name="reports",
    kinds={"python"},
    description="Random-read benchmark of the current dataset version; the table is in the metadata.",
)
def benchmark_report(config: BenchmarkConfig, store: DatasetStore) -> dg.MaterializeResult:
    options = store.storage_options()
    ds = open_dataset(store.root, storage_options=options)
    figures = measure_readpath(ds, samples=config.samples, batch_size=config.batch_size)
    markdown = figures_markdown("Read path", figures, ds.version)
    report = write_report(store.root, f"readpath_v{ds.version}", markdown, options)
    return lineage_result(
        store,
        rows_written=0,
        bytes_written=len(markdown.encode()),
        frames_version=ds.version,
        extra={
            "report": dg.MetadataValue.md(markdown),
            "report_path": store.safe_uri(report),
            "measured_version": ds.version,
            **{name: value if isinstance(value, int | float) else str(value) for name, value in figures.items()},
        },
    )


defs = dg.Definitions(assets=[benchmark_report])
