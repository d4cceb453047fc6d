"""The README's demo, run through Dagster: sample uploads -> partitions -> every asset
materialized in-process against a local DAGSTER_HOME -> summary, one decoded frame as PNG."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import dagster as dg
import numpy as np
from PIL import Image

from robodata._summary import dataset_summary
from robodata.codec._quality import jpeg_roundtrip, psnr
from robodata.orchestration._instance import prepare_dagster_home
from robodata.orchestration.defs.ingest import checks, episodes
from robodata.orchestration.defs.ingest.episodes import register_uploads
from robodata.orchestration.defs.ingest.jobs import ingest_episode_job
from robodata.orchestration.defs.labels import annotations as label_assets
from robodata.orchestration.defs.reports import benchmark
from robodata.orchestration.defs.resources import DatasetStore
from robodata.orchestration.defs.training import snapshots
from robodata.reader import open_dataset
from robodata.sample_data import write_sample_uploads

QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def run_demo(workdir: str, episodes: int = 4, seconds: float = 4.0) -> dict:
    """Write ``episodes`` sample uploads under ``workdir`` and build the dataset with Dagster.

    >>> import contextlib, io
    >>> with contextlib.redirect_stdout(io.StringIO()):  # it prints the summary and where to look
    ...     summary = run_demo("demo", episodes=1, seconds=0.5)
    >>> summary["episodes"], summary["rows"], sorted(summary["cameras"])
    (1, 47, ['top', 'wrist_left', 'wrist_right'])
    """

    root = Path(workdir).resolve()
    run_name = time.strftime("demo-run-%Y%m%d-%H%M%S")  # a tag names one version: one per demo run
    write_sample_uploads(root / "uploads", episodes=episodes, seconds=seconds)
    labels = _write_success_labels(root / "labels" / "success.csv", episodes)
    store = DatasetStore(root=str(root / "dataset"), uploads_root=str(root / "uploads"))
    home = prepare_dagster_home(root / "dagster_home")
    with dg.DagsterInstance.get() as instance:
        partitions = register_uploads(instance, store)
        reports = materialize_all(instance, store, partitions, labels, run_name)
    summary = report(store.root, root)
    print(f"The Dagster UI on this demo's instance: {ui_command(home)}")
    print(
        f"Lance versions: frames.lance {summary['version']}, gops.lance {summary['gops_version']}, "
        f"tag {run_name!r} -> version {summary['tags'].get(run_name)}"
    )
    print(f"benchmark report: {reports['benchmark_report']} (also in the benchmark_report asset's metadata)")
    return summary


def ui_command(home: Path) -> str:
    """The one command that opens the Dagster UI (and its daemon) on instance ``home``, from a
    checkout or an installed package alike (the README and docs/dagster.md give the same).

    >>> ui_command(Path("/srv/demo/dagster_home"))
    'DAGSTER_HOME=/srv/demo/dagster_home dagster dev -m robodata.orchestration.definitions'
    """
    return f"DAGSTER_HOME={shlex.quote(str(home))} dagster dev -m robodata.orchestration.definitions"


def materialize_all(instance, store, partitions: list[str], labels_path: str, run_name: str) -> dict[str, str]:
    """Materialize every asset in-process: each episode partition (checks included), then
    annotations, the training snapshot and the benchmark report. Returns the report's path."""
    from tqdm import tqdm

    resources = {"store": store}
    episode_assets = [episodes.raw_episodes, episodes.gop_blobs, episodes.aligned_frames]
    for key in tqdm(partitions, desc="dagster: ingest episodes", unit="episode"):
        run_named_job(
            "ingest_episode", episode_assets, asset_checks=checks.episode_checks, job=ingest_episode_job,
            instance=instance, resources=resources, partition_key=key, run_config=QUIET,
        )  # fmt: skip
    config = {
        "annotations": {"config": {"labels_path": labels_path}},
        "training_snapshot": {"config": {"run_name": run_name}},
    }
    # the report measures through robodata.measure, which ships in the wheel
    assets = [label_assets.annotations, snapshots.training_snapshot, benchmark.benchmark_report]
    result = run_named_job(
        "demo_labels_snapshot_report",
        assets,
        instance=instance,
        resources=resources,
        run_config={**QUIET, "ops": config},
    )
    bench = result.asset_materializations_for_node("benchmark_report")[0]
    return {"benchmark_report": str(bench.metadata["report_path"].value)}


def _write_success_labels(path: Path, episodes: int) -> str:
    """Per-episode success / failure labels, as an evaluator would hand them over."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["episode_index,success"] + [f"{i},{'true' if i % 3 else 'false'}" for i in range(episodes)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def report(dataset: str, out: Path) -> dict:
    summary = dataset_summary(dataset)
    ds = open_dataset(dataset)
    column = ds.image_columns[0]
    rows = np.linspace(0, len(ds) - 1, 24).astype(int)
    frames = ds.get_frames(rows, cameras=column)[column]
    jpeg = [jpeg_roundtrip(f, 90) for f in frames]
    video_per_frame = _video_bytes_per_frame(ds, column)
    summary["video_vs_jpeg"] = {
        "camera": column,
        "h264_bytes_per_frame": round(video_per_frame),
        "jpeg_q90_bytes_per_frame": round(float(np.mean([size for size, _ in jpeg]))),
        "jpeg_q90_psnr_db": round(float(np.mean([psnr(f, j) for f, (_, j) in zip(frames, jpeg, strict=True)])), 2),
    }
    png = out / "frame.png"
    Image.fromarray(np.asarray(ds[len(ds) // 2][column])).save(png)
    summary["frame_png"] = str(png)
    print(json.dumps(summary, indent=2))
    return summary


def _video_bytes_per_frame(ds, column: str) -> float:
    from robodata.format._ids import camera_filter
    from robodata.format._renditions import full_resolution_only
    from robodata.format._schema import camera_of
    from robodata.format._tables import gops_uri, open_table

    camera = camera_of(column, ds.cameras)
    gops = open_table(gops_uri(ds.uri))
    table = gops.to_table(
        columns=["n_frames", "packet_sizes"], filter=full_resolution_only(gops, camera_filter(camera))
    )
    frames = sum(table["n_frames"].to_pylist())
    total = sum(sum(p) for p in table["packet_sizes"].to_pylist())
    return total / max(frames, 1)


def run_named_job(
    name: str,
    assets: list,
    *,
    instance: dg.DagsterInstance,
    resources: dict,
    asset_checks: list | None = None,
    job: dg.UnresolvedAssetJobDefinition | None = None,
    partition_key: str | None = None,
    run_config: dict | None = None,
) -> dg.ExecuteInProcessResult:
    """Run ``assets`` (and their ``asset_checks``) in-process as job ``name`` (``job``, e.g.
    ``ingest_episode``, or one made here over all of ``assets``), so the runs carry a name in
    the UI instead of ``__ephemeral_asset_job__``.

    >>> @dg.asset
    ... def greeting() -> str:
    ...     return "hello"
    >>> result = run_named_job("say_hello", [greeting], instance=dg.DagsterInstance.ephemeral(), resources={})
    >>> result.success, result.dagster_run.job_name
    (True, 'say_hello')
    """
    job = job or dg.define_asset_job(name, selection=assets)
    defs = dg.Definitions(assets=assets, asset_checks=asset_checks or [], jobs=[job], resources=resources)
    return defs.resolve_job_def(job.name).execute_in_process(
        instance=instance, partition_key=partition_key, run_config=run_config or {}
    )
