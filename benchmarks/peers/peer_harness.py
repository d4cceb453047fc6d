"""``robodata bench OUT --peers VENV``: robodata (``make_dataloader`` and ``LeRobotCompatDataset``)
against the real LeRobot 0.6.1 and lerobot-lancedb 0.3.1's ``LanceDBDataset`` on the same source
episodes, at native resolution and at the policy's 224 x 224, each system in processes of its own
(``peer_runner.py``), rounds interleaved, medians over rounds. The peers' dataset is written by
LeRobot's own writer from the source frames (``lerobot_writer.py``), LanceDB's by
``lerobot-lance-convert`` of it.

The steps live beside it: ``peer_dataset.py`` (robodata's dataset and its rendition),
``peer_layouts.py`` (the peers' copies), ``peer_compat.py`` (the LeRobot user's D batches),
``peer_runs.py`` (one system's runner process), ``peer_profiles.py`` (why an aim was missed).

>>> result = run_peer_benchmark("bench_out", ".peers-venv")  # doctest: +SKIP
>>> print(result.table_markdown)      # the side-by-side table with aims  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import BenchmarkResult, _dataset_facts, _json_default, _machine
from benchmarks.lerobot_baseline import LeRobotLayoutReader
from benchmarks.pairing import baseline_rows
from benchmarks.peers.footage import benchmark_uploads
from benchmarks.peers.gop_crf_sweep import choose_default, sweep_gop_crf, sweep_table
from benchmarks.peers.peer_compat import compat_datasets, compat_plan
from benchmarks.peers.peer_dataset import add_training_rendition, ingest_footage, robodata_size_path
from benchmarks.peers.peer_layouts import prepare_peer_layouts, write_peer_layouts
from benchmarks.peers.peer_profiles import explain_peer_misses
from benchmarks.peers.peer_protocol import peer_python
from benchmarks.peers.peer_report import render_peer_report, side_by_side_table, write_peer_plot
from benchmarks.peers.peer_runs import peer_frames, root_kind, run_system, warmup_rows
from benchmarks.peers.peer_scenarios import (
    PeerConfig,
    loader_rows_match,
    order_randomness,
    peer_aims,
    plan_round,
    ratio_rows,
    scenario_jobs,
    summarize,
)
from benchmarks.peers.peer_storage import peer_storage
from benchmarks.report import headline_table
from benchmarks.scenarios import Pair, window_offsets
from robodata.reader import open_dataset
from robodata.torch import BatchReader, BlockSampler


@dataclass(frozen=True)
class Footage:
    """The source episodes: ``source`` auto (gym-aloha where installed), aloha or sample.
    6 x 300 steps is the issue's measurement (1,800 rows, 3 cameras 640x480 at 50 fps)."""

    source: str = "auto"
    episodes: int = 6
    steps: int = 300  # gym-aloha control steps (= camera frames at 50 fps) per episode: 6 s
    seconds: float = 3.0  # synthetic episodes' length


def run_peer_benchmark(
    out_dir: str | os.PathLike,
    peers_venv: str | os.PathLike,
    *,
    dataset_uri: str | None = None,
    version: int | str | None = None,
    storage_options: dict | None = None,
    footage: Footage | None = None,
    config: PeerConfig | None = None,
    small: bool = False,
    gop_size: int | None = None,
    crf: int | None = None,
    episodes_per_file: int = 50,
    nice: int = 0,
    sweep: bool = False,
    progress: bool = True,
    command: str | None = None,
) -> BenchmarkResult:
    """Build (or take) a dataset, export it for the peers, measure A-D and storage, write the report.

    Without ``dataset_uri`` it ingests the benchmark footage (gym-aloha where the peers' venv has
    it) at ``gop_size``/``crf`` (robodata's defaults unless given).
    """
    python = peer_python(peers_venv)
    cfg = config or (PeerConfig.small() if small else PeerConfig())
    footage = footage or (Footage(episodes=2, steps=30, seconds=1.0) if small else Footage())
    out = Path(out_dir)
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log = out / "runners.log"
    log.write_text("")
    say = (lambda *a, **k: print(*a, **k, flush=True)) if progress else (lambda *a, **k: None)
    started, load_before = time.perf_counter(), os.getloadavg()

    uploads, source, ingest = None, "given dataset", None
    if dataset_uri is None:
        say("footage ...")
        uploads, source = benchmark_uploads(
            work,
            python,
            source=footage.source,
            episodes=footage.episodes,
            steps=footage.steps,
            seconds=footage.seconds,
            seed=cfg.seed,
            log=log,
        )
        say(f"ingest {len(uploads)} {source} episodes ...")
        dataset_uri = str(work / "dataset")
        ingest = ingest_footage(uploads, dataset_uri, gop_size, crf)
    rendition = add_training_rendition(dataset_uri, cfg.sizes, storage_options) if ingest is not None else None
    ds = open_dataset(dataset_uri, version=version, storage_options=storage_options)
    if uploads is not None:
        say("the peers' dataset: LeRobot's writer from the source, then lerobot-lance-convert ...")
        roots, layout_seconds = write_peer_layouts(uploads, work, python, log)
        roots["robodata"] = dataset_uri
    else:
        say("the peers' dataset: export-lerobot of the given dataset (it has no source frames here) ...")
        roots, layout_seconds = prepare_peer_layouts(
            dataset_uri, ds.version, work, python, episodes_per_file, log, storage_options
        )
    # robodata's runner opens the dataset itself: it gets the options with its job (stdin, never logged).
    own: dict[str, Any] = {"version": ds.version, **({"storage_options": storage_options} if storage_options else {})}
    reader = LeRobotLayoutReader(roots["lerobot"])
    paired = baseline_rows(ds, reader)
    pair = Pair(ds, reader, paired)
    row_offsets, _ = window_offsets(pair, cfg.window_frames)
    window = {"row_offsets": row_offsets, "fps": float(ds.metadata.cameras[pair.main_camera].fps)}

    blocks, randomness = None, None
    if cfg.order == "block":
        # D reads make_dataloader's default order; its window is the one make_dataloader sizes at native size
        if cfg.window_rows is None:
            native = BatchReader(dataset_uri, version=ds.version, storage_options=storage_options)
            cfg = replace(cfg, window_rows=native.window_rows())
        blocks = BlockSampler.for_dataset(ds, batch_size=cfg.batch_size).block_of_row
    compat = compat_datasets(dataset_uri, ds.version, storage_options, cfg) if cfg.order == "block" else {}
    rng = np.random.default_rng(cfg.seed)
    systems = cfg.systems()
    rounds, loader_checks, labels, versions = [], [], {}, {}
    for r in range(cfg.rounds):
        plan = plan_round(rng, len(ds), cfg, r, blocks)
        compat_rows = None
        if compat:
            plan["D_compat"], compat_rows = compat_plan(compat, cfg, plan["seed"])
        if randomness is None:
            randomness = order_randomness(ds, plan, cfg, compat_rows)
        order = systems[r % len(systems) :] + systems[: r % len(systems)]  # who goes first rotates
        measured: dict[str, list[dict]] = {s.key: [] for s in systems}
        for phase in (0, 1):  # A, B, C (and the bound) for every system, then D for every system
            for system in order:
                # Every size in one process: native first, then the policy's size.
                per_size = [(size, scenario_jobs(system, plan, paired, cfg, window, size)[phase]) for size in cfg.sizes]
                measurements = [{**m, "size": list(size) if size else None} for size, ms in per_size for m in ms]
                if not measurements:
                    continue
                say(f"round {r + 1}/{cfg.rounds}: {system.key} {', '.join(m['name'] for m in measurements)} ...")
                answer = run_system(
                    system,
                    roots,
                    python,
                    measurements,
                    warmup_rows(system, paired, len(ds)),
                    log,
                    nice,
                    **(own if system.runner.startswith("robodata") else {}),
                )
                labels[system.key], versions[system.key] = answer["label"], answer["versions"]
                measured[system.key] += answer["measurements"]
                # the LeRobot user's uniform order (order "global") shuffles with torch's generator
                if phase == 1 and (system.runner != "robodata-compat" or cfg.order == "block"):
                    for asked, loader in zip(measurements, answer["measurements"], strict=True):
                        if loader["kind"] != "loader":
                            continue
                        loader_checks.append(
                            {
                                "round": r,
                                "scenario": loader["name"],
                                "system": system.key,
                                "same_rows": loader_rows_match(asked["batches"], loader["delivered"]),
                            }
                        )
        rounds.append(measured)
        # Kept as the run goes: a failure later (storage, profiles, report) loses no measurement.
        (out / "rounds.json").write_text(json.dumps(rounds, default=_json_default))

    say("storage and picture quality ...")
    quality_rows = np.sort(rng.choice(len(ds), min(cfg.quality_rows, len(ds)), replace=False))
    frames = {
        s.key: peer_frames(s, roots, python, paired[quality_rows], work, log, nice)
        for s in systems
        if s.key in ("lerobot-torchcodec", "lancedb")
    }
    storage = peer_storage(ds, uploads, quality_rows, frames, roots)

    summary = summarize(rounds)
    aims = peer_aims(summary, storage, cfg)
    say("profiles of missed aims ...")
    profiles = explain_peer_misses(aims, roots, python, paired, rng, len(ds), cfg, window, log, nice, own)
    versions["robodata-compat"] = versions.get("robodata-compat", {})
    results: dict[str, Any] = {
        "command": command or f"robodata bench {out} --peers {peers_venv}",
        "machine": _machine(load_before),
        "config": asdict(cfg),
        "footage": {**asdict(footage), "source": source},
        "dataset": _dataset_facts(ds, dataset_uri, uploads is not None),
        "rendition": rendition,
        "size_path": robodata_size_path(),
        "peers_source": "LeRobotDataset writer from the source frames" if uploads is not None else "export-lerobot",
        "systems": {
            s.key: {
                "label": s.label,
                "runner_label": labels.get(s.key, s.label),
                "versions": versions.get(s.key, {}),
                "root": roots[root_kind(s)],
            }
            for s in systems
        },
        "layouts_seconds": layout_seconds,
        "ingest": ingest,
        "summary": summary,
        "ratios": ratio_rows(summary, cfg),
        "batch_randomness": randomness,
        "loader_same_rows": loader_checks,
        "storage": storage,
        "aims": aims,
        "profiles": profiles,
    }
    if sweep and uploads is not None:
        results["gop_crf_sweep"] = _sweep(uploads, work, storage, cfg, nice, log, say, small, quality_rows)
    results["machine"]["load_average_at_end"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    results["date"] = time.strftime("%Y-%m-%d %H:%M %Z")
    results["aims_table"] = headline_table(results)
    results["machine"]["wall_seconds"] = time.perf_counter() - started
    plots = {"peers": write_peer_plot(results, out / "peers.png")}
    results["plots"] = {name: path.name for name, path in plots.items()}
    (out / "report.md").write_text(render_peer_report(results))
    (out / "results.json").write_text(json.dumps(results, indent=2, default=_json_default))
    return BenchmarkResult(
        out,
        out / "report.md",
        out / "results.json",
        plots,
        results,
        side_by_side_table(results),
        dataset_uri,
        ds.version,
    )


def _sweep(
    uploads: dict[int, Path],
    work: Path,
    storage: dict,
    cfg: PeerConfig,
    nice: int,
    log: Path,
    say,
    small: bool,
    quality_rows: np.ndarray,
) -> dict:
    """The G x CRF x preset sweep on the same footage; the default is chosen within LeRobot's bytes and PSNR."""
    grid: dict[str, Any] = {"gop_sizes": (4, 8), "crfs": (23,), "presets": ("veryfast",)} if small else {}
    points = sweep_gop_crf(
        uploads,
        work / "sweep",
        batch_size=cfg.batch_size,
        workers=cfg.loader_workers,
        loader_batches=max(3, cfg.loader_batches),
        quality_rows=quality_rows,  # the rows the peers' PSNR came from
        seed=cfg.seed,
        nice=nice,
        log=log,
        say=say,
        random_rows=20 if small else 200,
        **grid,
    )
    lerobot = storage.get("lerobot-torchcodec", {})
    limits = {"max_bytes_per_frame": lerobot.get("bytes_per_frame"), "min_psnr_db": lerobot.get("psnr_top_db")}
    chosen = choose_default(points, **limits)
    return {
        "points": points,
        "limits": limits,
        "chosen": None
        if chosen is None
        else {
            "gop_size": chosen["gop_size"],
            "crf": chosen["crf"],
            "preset": chosen.get("preset"),
            "fast_decode": chosen.get("fast_decode", True),
        },
        "table": sweep_table(points, chosen),
    }
