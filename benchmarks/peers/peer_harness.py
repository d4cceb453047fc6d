"""``robodata bench OUT --peers VENV``: robodata against the real LeRobot 0.6.1 (torchcodec and pyav)
and lerobot-lancedb 0.3.1's ``LanceDBDataset`` on the same episodes, each system in processes of
its own (``peer_runner.py``), rounds interleaved, medians over rounds.

>>> result = run_peer_benchmark("bench_out", ".peers-venv")  # doctest: +SKIP
>>> print(result.table_markdown)      # the side-by-side table with aims  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import BenchmarkResult, _dataset_facts, _json_default, _machine
from benchmarks.ingest_speed import summarize as summarize_ingest
from benchmarks.ingest_speed import timed_ingest
from benchmarks.lerobot_baseline import LeRobotLayoutReader
from benchmarks.pairing import baseline_rows
from benchmarks.peers.footage import benchmark_uploads
from benchmarks.peers.gop_crf_sweep import choose_default, sweep_gop_crf, sweep_table
from benchmarks.peers.peer_protocol import peer_python, run_job
from benchmarks.peers.peer_report import render_peer_report, side_by_side_table, write_peer_plot
from benchmarks.peers.peer_scenarios import (
    SYSTEMS,
    PeerConfig,
    System,
    job_for,
    loader_rows_match,
    peer_aims,
    plan_round,
    ratio_rows,
    scenario_jobs,
    summarize,
)
from benchmarks.peers.peer_storage import peer_storage
from benchmarks.profiling import Profile, profile_from_own_times
from benchmarks.scenarios import Pair, window_offsets
from robodata.codec import EncoderSettings
from robodata.interop import export_lerobot
from robodata.reader import open_dataset


@dataclass(frozen=True)
class Footage:
    """The source episodes: ``source`` auto (gym-aloha where installed), aloha or sample."""

    source: str = "auto"
    episodes: int = 4
    steps: int = 150  # gym-aloha control steps (= camera frames at 50 fps) per episode: 3 s
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
    say = print if progress else (lambda *a, **k: None)
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
        ingest = _ingest(uploads, dataset_uri, gop_size, crf)
    ds = open_dataset(dataset_uri, version=version, storage_options=storage_options)
    say("export for the peers ...")
    roots, layout_seconds = prepare_peer_layouts(
        dataset_uri, ds.version, work, python, episodes_per_file, log, storage_options
    )
    # robodata's runner opens the dataset itself: it gets the options with its job (stdin, never logged).
    own = {"version": ds.version, **({"storage_options": storage_options} if storage_options else {})}
    reader = LeRobotLayoutReader(roots["lerobot"])
    paired = baseline_rows(ds, reader)
    pair = Pair(ds, reader, paired)
    row_offsets, _ = window_offsets(pair, cfg.window_frames)
    window = {"row_offsets": row_offsets, "fps": float(ds.metadata.cameras[pair.main_camera].fps)}

    rng = np.random.default_rng(cfg.seed)
    rounds, loader_checks, labels, versions = [], [], {}, {}
    for r in range(cfg.rounds):
        plan = plan_round(rng, len(ds), cfg, r)
        order = SYSTEMS[r % len(SYSTEMS) :] + SYSTEMS[: r % len(SYSTEMS)]  # who goes first rotates
        measured: dict[str, list[dict]] = {s.key: [] for s in SYSTEMS}
        for phase in (0, 1):  # A, B, C for every system, then D for every system
            for system in order:
                say(f"round {r + 1}/{cfg.rounds}: {system.key} {'A, B, C' if phase == 0 else 'D'} ...")
                jobs = scenario_jobs(system, plan, paired, cfg, window)
                answer = _run(
                    system,
                    roots,
                    python,
                    jobs[phase],
                    _warmup(system, paired, len(ds)),
                    log,
                    nice,
                    **(own if system.key == "robodata" else {}),
                )
                labels[system.key], versions[system.key] = answer["label"], answer["versions"]
                measured[system.key] += answer["measurements"]
                if phase == 1:
                    loader = answer["measurements"][0]
                    loader_checks.append(
                        {
                            "round": r,
                            "system": system.key,
                            "same_rows": loader_rows_match(jobs[1][0]["batches"], loader["delivered"]),
                        }
                    )
        rounds.append(measured)

    say("storage and picture quality ...")
    quality_rows = np.sort(rng.choice(len(ds), min(cfg.quality_rows, len(ds)), replace=False))
    frames = {
        s.key: _peer_frames(s, roots, python, paired[quality_rows], work, log, nice)
        for s in SYSTEMS
        if s.key in ("lerobot-torchcodec", "lancedb")
    }
    storage = peer_storage(ds, uploads, quality_rows, frames, roots)

    summary = summarize(rounds)
    aims = peer_aims(summary, storage, cfg)
    say("profiles of missed aims ...")
    profiles = explain_peer_misses(aims, roots, python, paired, rng, len(ds), cfg, window, log, nice, own)
    results: dict[str, Any] = {
        "command": command or f"robodata bench {out} --peers {peers_venv}",
        "machine": _machine(load_before),
        "config": asdict(cfg),
        "footage": {**asdict(footage), "source": source},
        "dataset": _dataset_facts(ds, dataset_uri, uploads is not None),
        "systems": {
            s.key: {
                "label": labels.get(s.key, s.label),
                "versions": versions.get(s.key, {}),
                "root": roots[_root_kind(s)],
            }
            for s in SYSTEMS
        },
        "layouts_seconds": layout_seconds,
        "ingest": ingest,
        "summary": summary,
        "ratios": ratio_rows(summary, cfg),
        "loader_same_rows": loader_checks,
        "storage": storage,
        "aims": aims,
        "profiles": profiles,
    }
    if sweep and uploads is not None:
        results["gop_crf_sweep"] = _sweep(uploads, work, storage, cfg, nice, log, say, small)
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
    uploads: dict[int, Path], work: Path, storage: dict, cfg: PeerConfig, nice: int, log: Path, say, small: bool
) -> dict:
    """The G x CRF sweep on the same footage; the default is chosen within LeRobot's bytes and PSNR."""
    grid = {"gop_sizes": (4, 8), "crfs": (23,)} if small else {}
    points = sweep_gop_crf(
        uploads,
        work / "sweep",
        batch_size=cfg.batch_size,
        workers=cfg.loader_workers,
        loader_batches=max(3, cfg.loader_batches),
        quality_rows=cfg.quality_rows,
        seed=cfg.seed,
        nice=nice,
        log=log,
        say=say,
        **grid,
    )
    lerobot = storage.get("lerobot-torchcodec", {})
    limits = {"max_bytes_per_frame": lerobot.get("bytes_per_frame"), "min_psnr_db": lerobot.get("psnr_top_db")}
    chosen = choose_default(points, **limits)
    return {
        "points": points,
        "limits": limits,
        "chosen": None if chosen is None else {"gop_size": chosen["gop_size"], "crf": chosen["crf"]},
        "table": sweep_table(points, chosen),
    }


def _ingest(uploads: dict[int, Path], uri: str, gop_size: int | None, crf: int | None) -> dict:
    defaults = EncoderSettings()
    gop, quality = gop_size or defaults.gop_size, crf or defaults.crf
    if quality == defaults.crf:
        timings = timed_ingest(list(uploads.values()), uri, gop)
    else:  # timed_ingest encodes at the default CRF
        from robodata.ingest import ingest_episode

        timings = []
        for upload in uploads.values():
            start = time.perf_counter()
            ingest_episode(str(upload), uri, settings=EncoderSettings(gop_size=gop, crf=quality))
            timings.append({"seconds": time.perf_counter() - start})
        return {"gop_size": gop, "crf": quality, "seconds": sum(t["seconds"] for t in timings)}
    return {**summarize_ingest(timings), "gop_size": gop, "crf": quality}


def prepare_peer_layouts(
    uri: str,
    version: int,
    work: Path,
    python: Path,
    episodes_per_file: int,
    log: Path,
    storage_options: dict | None = None,
) -> tuple[dict[str, str], dict[str, float]]:
    """The peers' copies of ``uri`` at ``version``: ``export-lerobot --rate camera`` (LeRobot v3.0,
    AV1 as LeRobot encodes) and ``lerobot-lance-convert`` of that export (lerobot-lancedb's layout)."""
    lerobot, lance = work / "lerobot", work / "lance"
    start = time.perf_counter()
    export_lerobot(
        uri,
        lerobot,
        version=version,
        episodes_per_file=episodes_per_file,
        progress=False,
        rate="camera",
        storage_options=storage_options,
    )
    exported = time.perf_counter() - start
    convert = python.parent / "lerobot-lance-convert"
    with open(log, "a") as err:
        done = subprocess.run(
            [str(convert), "--root", str(lerobot), "--out", str(lance)],
            stdout=err,
            stderr=err,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"lerobot-lance-convert failed (exit code {done.returncode}); see {log}")
    return (
        {"robodata": uri, "lerobot": str(lerobot), "lance": str(lance)},
        {"export_lerobot": exported, "lerobot_lance_convert": time.perf_counter() - start - exported},
    )


def _root_kind(system: System) -> str:
    return {"robodata": "robodata", "lerobot": "lerobot", "lancedb": "lance"}[system.runner]


def _warmup(system: System, paired: np.ndarray, rows: int) -> list[int]:
    row = rows // 2
    return [row] if system.key == "robodata" else [int(paired[row])]


def _run(
    system: System,
    roots: dict,
    python: Path,
    measurements: list[dict],
    warmup: list[int],
    log: Path,
    nice: int,
    **options,
) -> dict:
    import sys

    interpreter = Path(sys.executable) if system.key == "robodata" else python
    job = {**job_for(system, roots[_root_kind(system)], measurements, warmup), **options}
    return run_job(interpreter, job, log=log, nice=nice)


def _peer_frames(
    system: System, roots: dict, python: Path, indices: np.ndarray, work: Path, log: Path, nice: int
) -> dict[str, np.ndarray]:
    out = work / f"frames-{system.key}.npz"
    measurement = {"name": "frames", "kind": "frames", "indices": [int(i) for i in indices], "out": str(out)}
    _run(system, roots, python, [measurement], [int(indices[0])], log, nice)
    with np.load(out) as data:
        return {camera: data[camera] for camera in data.files}


def explain_peer_misses(
    aims: list[dict],
    roots: dict,
    python: Path,
    paired: np.ndarray,
    rng: np.random.Generator,
    rows: int,
    cfg: PeerConfig,
    window: dict,
    log: Path,
    nice: int,
    own_options: dict | None = None,
) -> dict[str, dict]:
    """cProfile (calling thread only) robodata, with one decode thread, and the peer of each missed
    A-D aim on the same inputs; attach the split of time to the aim as ``why``. D is profiled
    through the batched read each DataLoader worker runs (B's path)."""
    by_key = {s.key: s for s in SYSTEMS}
    profiles: dict[str, dict] = {}
    cache: dict[tuple[str, str], dict] = {}
    kinds = {"A": "sample", "B": "batch", "C": "window", "D": "batch"}
    inputs: dict[str, Any] = {
        "sample": rng.integers(0, rows, 6),
        "batch": [rng.integers(0, rows, cfg.batch_size)],
        "window": rng.integers(0, rows, 4),
    }
    for aim in aims:
        scenario = aim["key"].split("-")[0]
        if aim["met"] or scenario not in kinds:
            continue
        kind = kinds[scenario]
        for key in ("robodata", aim["against"]):
            if (kind, key) in cache:
                continue
            own = key == "robodata"
            index = (lambda v: [int(i) for i in v]) if own else (lambda v: [int(i) for i in paired[np.asarray(v)]])
            measurement: dict[str, Any] = {
                "name": f"profile-{kind}",
                "kind": "profile",
                "of": kind,
                "frames": cfg.window_frames,
                **window,
            }
            if kind == "batch":
                measurement["batches"] = [index(b) for b in inputs["batch"]]
            else:
                measurement["indices"] = index(inputs[kind])
            options = (own_options or {}) if own else {}
            answer = _run(by_key[key], roots, python, [measurement], [], log, nice, concurrency=1, **options)
            m = answer["measurements"][0]
            label = f"{answer['label']} ({kind}{', 1 decode thread' if own else ''})"
            cache[(kind, key)] = profile_from_own_times(label, m["seconds_per_call"], m["own_seconds"]).to_dict()
        ours, theirs = cache[(kind, "robodata")], cache[(kind, aim["against"])]
        via = "each DataLoader worker runs the batched read: " if scenario == "D" else ""
        aim["why"] = (
            f"{via}{Profile(**ours).sentence()}; {Profile(**theirs).sentence()}; one-thread cost ratio "
            f"peer / robodata "
            f"{theirs['seconds'] / ours['seconds']:.2f}x"
        )
        profiles[aim["key"]] = {"robodata": ours, "peer": theirs}
    return profiles
