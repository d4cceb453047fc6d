"""``run_benchmark``: build (or take) a dataset, export its LeRobot-layout baseline, measure
scenarios A/B/C interleaved, the GOP-size sweep and ingest, and write report.md, results.json
and the plots."""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import time
from dataclasses import asdict, dataclass, replace
from importlib import metadata as package_metadata
from pathlib import Path

import numpy as np
from tqdm import tqdm

from benchmarks import plots
from benchmarks.aims import evaluate_aims, explain_misses
from benchmarks.ingest_speed import summarize, timed_ingest
from benchmarks.lerobot_baseline import LeRobotLayoutReader, real_lerobot_dataset
from benchmarks.loader import measure_loaders
from benchmarks.pairing import baseline_rows
from benchmarks.report import headline_table, render_report
from benchmarks.scenarios import Pair, scenario_a, scenario_b, scenario_c, scenario_real_lerobot
from benchmarks.storage import layout_storage, quality_sample
from benchmarks.sweep import storage_matched_point, sweep_gop_sizes
from robodata.codec import EncoderSettings
from robodata.lerobot import export_lerobot
from robodata.reader import open_dataset
from robodata.sample_data import write_sample_uploads

DEFAULT_GOP = EncoderSettings().gop_size  # the main dataset is ingested at robodata's default G


@dataclass(frozen=True)
class BenchmarkConfig:
    """Sizes of one run. The defaults are the full run (about 10 minutes on 2 cores)."""

    episodes: int = 20
    seconds: float = 3.0
    episodes_per_file: int = 5  # episodes per baseline MP4 (several, as LeRobot packs them)
    gop_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
    sweep_episodes: int = 3
    sweep_seconds: float = 6.0
    single_samples: int = 40
    batch_sizes: tuple[int, ...] = (32, 64, 128, 256)
    batch_repeats: int = 3
    window_samples: int = 20
    window_frames: int = 8
    quality_rows: int = 24
    readpath_samples: int = 40
    readpath_batch: int = 64
    profile_repeats: int = 3
    loader_workers: tuple[int, ...] = (0, 1, 2)  # training DataLoader grid (spawned workers)
    loader_batch_sizes: tuple[int, ...] = (32, 128)
    loader_samples: int = 512
    seed: int = 0

    @classmethod
    def small(cls) -> BenchmarkConfig:
        """Tiny sizes for tests and smoke runs (well under a minute)."""
        return cls(
            episodes=3,
            seconds=1.0,
            episodes_per_file=2,
            gop_sizes=(1, 8),
            sweep_episodes=1,
            sweep_seconds=1.0,
            single_samples=3,
            batch_sizes=(32,),
            batch_repeats=1,
            window_samples=2,
            quality_rows=3,
            readpath_samples=4,
            readpath_batch=16,
            profile_repeats=1,
            loader_workers=(0,),
            loader_batch_sizes=(16,),
            loader_samples=32,
        )


@dataclass
class BenchmarkResult:
    """What one run wrote and measured. ``results`` is the content of results.json and
    ``table_markdown`` the headline table of report.md (aims, targets, measured, met)."""

    out_dir: Path
    report_path: Path
    results_path: Path
    plots: dict[str, Path]
    results: dict
    table_markdown: str
    dataset_uri: str
    dataset_version: int


def run_benchmark(
    out_dir: str | os.PathLike,
    *,
    dataset_uri: str | None = None,
    version: int | str | None = None,
    storage_options: dict | None = None,
    small: bool = False,
    episodes: int | None = None,
    seconds: float | None = None,
    config: BenchmarkConfig | None = None,
    progress: bool = True,
    command: str | None = None,
) -> BenchmarkResult:
    """Run the whole benchmark into ``out_dir`` (its ``work/`` subfolder is scratch, replaced).

    Without ``dataset_uri`` it generates ``episodes`` sample episodes of ``seconds`` each and
    ingests them (timed); with it, it measures that dataset at ``version``. The GOP-size sweep
    always runs on freshly generated sample episodes, since it re-encodes from the source.

    >>> run_benchmark("bench_out", small=True).report_path  # doctest: +SKIP
    PosixPath('bench_out/report.md')
    """
    cfg = config or (BenchmarkConfig.small() if small else BenchmarkConfig())
    cfg = replace(cfg, episodes=episodes or cfg.episodes, seconds=seconds or cfg.seconds)
    out = Path(out_dir)
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    bar = tqdm(total=_planned_steps(cfg, dataset_uri is None), desc="benchmark", unit="step", disable=not progress)
    started = time.perf_counter()
    load_before = os.getloadavg()
    ds, uploads, ingest_timings = _prepare_dataset(cfg, work, dataset_uri, version, storage_options, bar)
    dataset_uri = ds.uri

    bar.set_description("export LeRobot layout")
    baseline_root = work / "lerobot"
    export_seconds = _export_baseline(dataset_uri, ds.version, baseline_root, cfg, storage_options)
    bar.update(1)
    reader = LeRobotLayoutReader(baseline_root)
    pair = Pair(ds, reader, baseline_rows(ds, reader), lambda: bar.update(1))
    rng = np.random.default_rng(cfg.seed)

    bar.set_description("scenarios A/B/C")
    scenarios, real_measured = _measure_scenarios(pair, cfg, rng, baseline_root)

    bar.set_description("training DataLoader")
    loader = measure_loaders(
        ds.uri, ds.version, baseline_root, cfg.loader_workers, cfg.loader_batch_sizes, cfg.loader_samples, pair.tick
    )

    bar.set_description("storage and quality")
    rows = np.sort(rng.choice(len(ds), min(cfg.quality_rows, len(ds)), replace=False))
    storage = layout_storage(ds, reader, quality_sample(ds, uploads, rows, reader, pair.paired))
    bar.update(1)

    bar.set_description("GOP-size sweep")
    sweep_uploads = _write_uploads(
        work / "sweep_uploads", cfg.sweep_episodes, cfg.sweep_seconds, cfg.seed + 1, pair.tick
    )
    sweep = sweep_gop_sizes(
        sweep_uploads,
        work / "sweep",
        list(cfg.gop_sizes),
        quality_rows=cfg.quality_rows,
        readpath_samples=cfg.readpath_samples,
        batch_size=cfg.readpath_batch,
        seed=cfg.seed,
        tick=pair.tick,
    )
    if not ingest_timings:  # a given dataset: time ingest on the sweep's episodes at the default G
        ingest_timings = next((r for r in sweep if r["gop_size"] == DEFAULT_GOP), sweep[0])["ingest"]

    bar.set_description("aims and profiles")
    a1 = next(s for s in scenarios if s["scenario"] == "A1")
    aims = evaluate_aims(scenarios, storage, sweep)
    profiles = explain_misses(
        aims, pair, sweep, rng, cfg.profile_repeats, min(16, cfg.readpath_batch), cfg.window_frames
    )
    results = {
        "command": command or _default_command(out, small, cfg),
        "machine": _machine(load_before),
        "config": asdict(cfg),
        "dataset": _dataset_facts(ds, dataset_uri, uploads is not None),
        "baseline": _baseline_facts(reader, export_seconds, real_measured),
        "scenarios": scenarios,
        "loader": loader,
        "storage": storage,
        "sweep": sweep,
        "storage_matched": storage_matched_point(sweep, storage, a1["baseline_per_s"]),
        "ingest": {**summarize(ingest_timings), "gop_size": DEFAULT_GOP, "per_episode": ingest_timings},
        "aims": aims,
        "profiles": profiles,
    }
    bar.set_description("plots and report")
    results["machine"]["wall_seconds"] = time.perf_counter() - started
    figures = _write_outputs(out, results)
    bar.update(1)
    bar.close()
    return BenchmarkResult(
        out, out / "report.md", out / "results.json", figures, results, headline_table(results), dataset_uri, ds.version
    )


def _prepare_dataset(cfg: BenchmarkConfig, work: Path, dataset_uri, version, storage_options, bar):
    """The dataset to measure: ``dataset_uri`` at ``version``, or fresh sample episodes ingested
    (and timed) at the default G. Returns (dataset, uploads by episode or None, ingest timings)."""
    if dataset_uri is not None:
        return open_dataset(dataset_uri, version=version, storage_options=storage_options), None, []
    bar.set_description("sample episodes")
    uploads = _write_uploads(work / "uploads", cfg.episodes, cfg.seconds, cfg.seed, lambda: bar.update(1))
    bar.set_description("ingest")
    uri = str(work / "dataset")
    timings = timed_ingest(list(uploads.values()), uri, DEFAULT_GOP, lambda: bar.update(1))
    return open_dataset(uri), uploads, timings


def _measure_scenarios(pair: Pair, cfg: BenchmarkConfig, rng: np.random.Generator, baseline_root: Path):
    """Scenarios A, B, C (and A3 against the real LeRobotDataset where lerobot is importable)."""
    # Load both sides' indexes and thread pools before anything is timed.
    pair.ds.get_windows([0], [0, 1])
    pair.reader.get_item(0, delta_indices=[0, 1])
    n = len(pair.ds)
    scenarios = scenario_a(pair, rng.integers(0, n, cfg.single_samples))
    scenarios += scenario_b(pair, list(cfg.batch_sizes), cfg.batch_repeats, rng)
    scenarios.append(scenario_c(pair, rng.integers(0, n, cfg.window_samples), cfg.window_frames))
    real = real_lerobot_dataset(baseline_root)
    if real is not None:
        scenarios.append(scenario_real_lerobot(pair, real, rng.integers(0, n, cfg.single_samples)))
    return scenarios, real is not None


def _write_outputs(out: Path, results: dict) -> dict[str, Path]:
    """The three plots, report.md and results.json into ``out``."""
    sweep, storage = results["sweep"], results["storage"]
    figures = {
        "storage_vs_gop": plots.storage_vs_gop(
            sweep, out / "storage_vs_gop.png", storage.get("baseline_vs_jpeg_bytes")
        ),
        "throughput_vs_gop": plots.throughput_vs_gop(
            sweep, out / "throughput_vs_gop.png", results["machine"]["cpu_count"]
        ),
        "scenarios": plots.scenario_comparison(results["scenarios"], out / "scenarios.png"),
    }
    results["plots"] = {name: path.name for name, path in figures.items()}
    (out / "report.md").write_text(render_report(results))
    (out / "results.json").write_text(json.dumps(results, indent=2, default=_json_default))
    return figures


def _planned_steps(cfg: BenchmarkConfig, built: bool) -> int:
    build = 2 * cfg.episodes if built else 0
    scenarios = 2 * cfg.single_samples + len(cfg.batch_sizes) * cfg.batch_repeats + cfg.window_samples
    sweep = cfg.sweep_episodes + 3 * len(cfg.gop_sizes)
    profiles = len(cfg.batch_sizes) + len(cfg.gop_sizes) + 3  # at most one per missed aim
    loaders = 2 * len(cfg.loader_workers) * len(cfg.loader_batch_sizes)
    return build + 1 + scenarios + loaders + 1 + sweep + profiles + 1


def _write_uploads(folder: Path, episodes: int, seconds: float, seed: int, tick) -> dict[int, Path]:
    uploads = {}
    for index in range(episodes):
        uploads[index] = write_sample_uploads(folder, 1, seed=seed, seconds=seconds, start_index=index)[0]
        tick()
    return uploads


def _export_baseline(uri: str, version: int, root: Path, cfg: BenchmarkConfig, storage_options) -> float:
    start = time.perf_counter()
    # At the camera rate, as LeRobot records: a control-rate export (100 fps, g=2) would give the
    # baseline a keyframe every 20 ms and 3.3x the frames, which no LeRobot user has.
    export_lerobot(
        uri,
        root,
        version=version,
        episodes_per_file=cfg.episodes_per_file,
        storage_options=storage_options,
        progress=False,
        rate="camera",
    )
    return time.perf_counter() - start


def _machine(load_before: tuple[float, float, float]) -> dict:
    versions = {name: _version_of(name) for name in ("pylance", "av", "numpy", "pyarrow")}
    return {
        "cpu_count": os.cpu_count() or 1,
        "processor": platform.processor() or platform.machine(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "packages": versions,
        "load_average_at_start": " ".join(f"{x:.2f}" for x in load_before),
        "load_average_at_end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def _version_of(name: str) -> str:
    try:
        return package_metadata.version(name)
    except package_metadata.PackageNotFoundError:
        return "not installed"


def _dataset_facts(ds, uri: str, built: bool) -> dict:
    return {
        "uri": uri,
        "generated_sample_data": built,
        "version": ds.version,
        "episodes": ds.episodes().num_rows,
        "rows": len(ds),
        "control_hz": ds.metadata.control_hz,
        "cameras": {c: f"{i.width}x{i.height}@{i.fps:g}" for c, i in ds.metadata.cameras.items()},
        "gop_size": ds.metadata.gop_size,
        "codec": " ".join(f"{k}={v}" for k, v in ds.metadata.codec.items())
        if isinstance(ds.metadata.codec, dict)
        else str(ds.metadata.codec),
    }


def _baseline_facts(reader: LeRobotLayoutReader, export_seconds: float, real_measured: bool) -> dict:
    files = reader.video_files()
    video_info = reader.info["features"][reader.video_keys[0]].get("info", {})
    return {
        "layout": f"LeRobot {reader.info.get('codebase_version', 'v3.0')}",
        "fps": reader.fps,
        "episodes": len(reader.episodes),
        "video_files": len(files),
        "episodes_per_video_file": len(reader.episodes) * len(reader.video_keys) / len(files),
        "encoding": {k.removeprefix("video."): v for k, v in video_info.items() if k.startswith("video.")},
        "export_seconds": export_seconds,
        "reader": "re-implementation of LeRobot's PyAV video backend (benchmarks.lerobot_baseline)",
        "lerobot_package": "importable: LeRobotDataset measured too" if real_measured else "not importable",
    }


def _default_command(out: Path, small: bool, cfg: BenchmarkConfig) -> str:
    flags = " --small" if small else f" --episodes {cfg.episodes} --seconds {cfg.seconds:g}"
    return f"robodata bench {out}{flags}"


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
