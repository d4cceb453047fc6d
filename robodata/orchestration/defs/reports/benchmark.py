"""benchmark_report: the read figures of the current dataset version (``robodata.measure``: random
reads, windows, the training loader, the decode bound), as a table; on request also the whole
benchmark (LeRobot-layout comparison, GOP-size sweep, the peers) with its plots. Those ship with
the source checkout's benchmarks/: asked for without them, the asset fails, saying so."""

import base64
import hashlib
import posixpath
import tempfile
from pathlib import Path

import dagster as dg
from pydantic import Field

from robodata._source_checkout import require_benchmarks
from robodata.measure import figures_markdown, measure_reads, write_report
from robodata.orchestration.defs.automation import report_automation
from robodata.orchestration.defs.ingest.episodes import aligned_frames
from robodata.orchestration.defs.lineage import code_version_of, lineage_result
from robodata.orchestration.defs.resources import DatasetStore
from robodata.storage import is_remote, join_uri


class BenchmarkConfig(dg.Config):
    samples: int = Field(default=200, description="Random rows read per measurement.")
    batch_size: int = Field(default=16, description="Rows per batched read and per training-loader batch.")
    window_frames: int = Field(default=8, description="Consecutive frames per timed window (every camera).")
    loader_samples: int = Field(default=512, description="Samples the training loader is timed over.")
    full: bool = Field(
        default=False,
        description="Also run the whole benchmark (scenarios against the LeRobot layout, GOP-size sweep) "
        "and attach its plots. Takes minutes.",
    )
    small: bool = Field(default=False, description="With full: tiny sizes, a smoke run.")
    peers_venv: str = Field(
        default="",
        description="The peers' venv (bash scripts/peers.sh VENV). When set, also measure the current version "
        "against the real LeRobot 0.6.1 (torchcodec, pyav) and lerobot-lancedb's LanceDBDataset, side by side "
        "with the aims. Takes minutes.",
    )


@dg.asset(
    deps=[aligned_frames],
    group_name="reports",
    code_version=code_version_of(__file__, "benchmark_report"),
    automation_condition=report_automation(),
    kinds={"python"},
    description="Read figures of the current dataset version (random reads, windows, training loader, decode "
    "bound); the table (and, with full, the plots) are in the metadata.",
)
def benchmark_report(config: BenchmarkConfig, store: DatasetStore) -> dg.MaterializeResult:
    if config.full or config.peers_venv:  # say so before minutes of measuring
        require_benchmarks("benchmark_report")
    options = store.storage_options()
    figures = measure_reads(
        store.root,
        storage_options=options,
        samples=config.samples,
        batch_size=config.batch_size,
        window_frames=config.window_frames,
        loader_samples=config.loader_samples,
    )
    version = figures["dataset_version"]
    markdown = figures_markdown("Read path", figures, version)
    report = write_report(store.root, f"readpath_v{version}", markdown, options)
    extra = {
        "report": dg.MetadataValue.md(markdown),
        "report_path": store.safe_uri(report),
        "measured_version": version,
        **{name: value if isinstance(value, int | float) else str(value) for name, value in figures.items()},
    }
    if config.full:
        extra.update(_full_benchmark(store, version, config.small))
    if config.peers_venv:
        extra.update(_peers_benchmark(store, version, config.peers_venv, config.small))
    # The asset stands for its report, not for frames.lance: its URI and data version are the
    # report's (named after the version measured, and its content's hash: each run measures anew).
    digest = hashlib.sha256(markdown.encode()).hexdigest()[:12]
    return lineage_result(
        store,
        rows_written=0,
        bytes_written=len(markdown.encode()),
        frames_version=version,
        output=(report, f"{posixpath.basename(report)}#{digest}"),
        extra=extra,
    )


def _full_benchmark(store: DatasetStore, version: int, small: bool) -> dict:
    require_benchmarks("benchmark_report")
    from benchmarks.harness import run_benchmark  # heavy (matplotlib): only when asked for

    out = _local_out(store, f"benchmark_v{version}")
    result = run_benchmark(
        out,
        dataset_uri=store.root,
        version=version,
        storage_options=store.storage_options(),
        small=small,
        progress=False,
    )
    plots = _embedded_plots(result.plots)
    return {
        "benchmark": dg.MetadataValue.md(result.table_markdown + "\n\n" + plots),
        "benchmark_report_path": dg.MetadataValue.path(str(result.report_path)),
        **{f"plot_{name}": dg.MetadataValue.path(str(path)) for name, path in result.plots.items()},
    }


def _peers_benchmark(store: DatasetStore, version: int, peers_venv: str, small: bool) -> dict:
    require_benchmarks("benchmark_report")
    from benchmarks.peers.peer_harness import run_peer_benchmark  # heavy: only when asked for
    from benchmarks.report import headline_table

    out = _local_out(store, f"peers_v{version}")
    result = run_peer_benchmark(
        out,
        peers_venv,
        dataset_uri=store.root,
        version=version,
        storage_options=store.storage_options(),
        small=small,
        progress=False,
    )
    plots = _embedded_plots(result.plots)
    return {
        "peers": dg.MetadataValue.md(result.table_markdown + "\n\n" + headline_table(result.results) + "\n\n" + plots),
        "peers_report_path": dg.MetadataValue.path(str(result.report_path)),
        **{
            f"peers_{row['scenario']}_vs_{group}": row[f"vs_{group}"]["ratio"]
            for row in result.results["ratios"]
            for group in ("lerobot", "lancedb")
            if f"vs_{group}" in row
        },
    }


def _local_out(store: DatasetStore, name: str) -> Path:
    """The harnesses write locally: next to a local dataset, else in a temporary folder."""
    if is_remote(store.root):
        return Path(tempfile.mkdtemp(prefix=f"robodata-{name}-"))
    return Path(join_uri(store.root, "reports", name))


defs = dg.Definitions(assets=[benchmark_report])


def _embedded_plots(plots: dict) -> str:
    """Markdown that shows each PNG inline in the Dagster UI (no file server needed)."""
    return "\n\n".join(
        f"![{name}](data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()})"
        for name, path in plots.items()
    )
