"""``robodata bench OUT --peers VENV``: robodata (``make_dataloader`` and ``LeRobotCompatDataset``)
against the real LeRobot 0.6.1 and lerobot-lancedb 0.3.1's ``LanceDBDataset`` on the same source
episodes, at native resolution and at the policy's 224 x 224, each system in processes of its own
(``peer_runner.py``), rounds interleaved, medians over rounds. The peers' dataset is written by
LeRobot's own writer from the source frames (``lerobot_writer.py``), LanceDB's by
``lerobot-lance-convert`` of it.

>>> result = run_peer_benchmark("bench_out", ".peers-venv")  # doctest: +SKIP
>>> print(result.table_markdown)      # the side-by-side table with aims  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import BenchmarkResult, _dataset_facts, _json_default, _machine
from benchmarks.ingest_speed import summarize as summarize_ingest
from benchmarks.ingest_speed import timed_ingest
from benchmarks.lerobot_baseline import LeRobotLayoutReader
from benchmarks.pairing import baseline_rows
from benchmarks.peers.footage import benchmark_uploads, cache_dir
from benchmarks.peers.gop_crf_sweep import choose_default, sweep_gop_crf, sweep_table
from benchmarks.peers.lerobot_writer import RESULT_PREFIX as WRITTEN_PREFIX
from benchmarks.peers.peer_protocol import peer_python, run_job, runner_env
from benchmarks.peers.peer_report import render_peer_report, side_by_side_table, write_peer_plot
from benchmarks.peers.peer_scenarios import (
    SYSTEMS,
    PeerConfig,
    System,
    compat_batches,
    job_for,
    loader_rows_match,
    order_randomness,
    peer_aims,
    plan_round,
    ratio_rows,
    scenario_jobs,
    scenario_key,
    split_key,
    summarize,
)
from benchmarks.peers.peer_storage import peer_storage
from benchmarks.profiling import Profile, profile_from_own_times
from benchmarks.report import headline_table
from benchmarks.scenarios import Pair, window_offsets
from robodata.codec import EncoderSettings
from robodata.lerobot import export_lerobot
from robodata.reader import open_dataset
from robodata.torch._batch_reader import BatchReader
from robodata.torch._block_order import BlockSampler

WRITER = Path(__file__).with_name("lerobot_writer.py")


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
        ingest = _ingest(uploads, dataset_uri, gop_size, crf)
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
                answer = _run(
                    system,
                    roots,
                    python,
                    measurements,
                    _warmup(system, paired, len(ds)),
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
        s.key: _peer_frames(s, roots, python, paired[quality_rows], work, log, nice)
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
        "size_path": _size_path(),
        "peers_source": "LeRobotDataset writer from the source frames" if uploads is not None else "export-lerobot",
        "systems": {
            s.key: {
                "label": s.label,
                "runner_label": labels.get(s.key, s.label),
                "versions": versions.get(s.key, {}),
                "root": roots[_root_kind(s)],
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


def compat_datasets(uri: str, version: int, storage_options: dict | None, cfg: PeerConfig) -> dict:
    """The LeRobot user's dataset at each of ``cfg.sizes`` as its runner opens it
    (``{scenario_key("D", size): LeRobotCompatDataset}``), to plan the batches its ``item_sampler``
    gives D (the mixing window depends on the frame size)."""
    from benchmarks.peers.peer_runner import robodata_takes_resolution
    from robodata.lerobot import LeRobotCompatDataset

    by_resolution = robodata_takes_resolution()
    return {
        scenario_key("D", size): LeRobotCompatDataset(
            uri,
            version=version,
            storage_options=storage_options,
            return_uint8=True,
            resolution=(int(size[0]), int(size[1])) if size is not None and by_resolution else None,
        )
        for size in cfg.sizes
    }


def compat_plan(compat: dict, cfg: PeerConfig, seed: int) -> tuple[dict, dict]:
    """D's batches of items for the LeRobot user's path at each size (what ``DataLoader(ds,
    sampler=ds.item_sampler(batch_size=, num_workers=, seed=))`` reads in the timed epoch) and,
    at native size, the same batches as robodata rows with the order's window (for the
    randomness figures)."""
    planned, native = {}, {}
    for key, dataset in compat.items():
        sampler = dataset.item_sampler(batch_size=cfg.batch_size, num_workers=cfg.loader_workers, seed=seed)
        planned[key] = compat_batches(sampler, cfg)
        if split_key(key)[1] is None:
            rows = dataset._array("rows")  # items -> robodata rows
            native = {"batches": [rows[b] for b in planned[key]], "window_rows": sampler.window_rows}
    return planned, native


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


def add_training_rendition(uri: str, sizes, storage_options: dict | None = None) -> dict | None:
    """Add a training rendition at the policy's size to the freshly ingested benchmark dataset,
    where this robodata can (``robodata.ingest._renditions.add_rendition``, from the renditions
    work); None otherwise, and robodata reads at that size by resizing decoded frames like the
    peers. The runner picks ``resolution=`` on its own where the readers take it."""
    size = next((s for s in sizes if s is not None), None)
    if size is None:
        return None
    try:
        from robodata.ingest._renditions import add_rendition
    except ImportError:
        return None
    start = time.perf_counter()
    done = add_rendition(uri, tuple(size), storage_options=storage_options)
    return {
        "size": list(size),
        "seconds": time.perf_counter() - start,
        "bytes": getattr(done, "bytes_written", None),
        "result": repr(done),
    }


def _size_path() -> str:
    """How robodata reads at the policy's size in this run (asked of the runner's own code)."""
    import sys

    code = "import sys; sys.path.insert(0, sys.argv[1]); import peer_runner; print(peer_runner.robodata_takes_resolution())"
    done = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        env=runner_env(sys.executable),
        check=False,
    )
    takes = done.stdout.strip().endswith("True")
    return "resolution= (training renditions)" if takes else "decoded frames resized like the peers'"


def peer_cache(uploads: dict[int, Path]) -> Path | None:
    """Where the peers' copies of cached footage are kept (beside it), or None for footage of
    this run only (synthetic episodes in the work folder)."""
    parent = Path(next(iter(uploads.values()))).parent.resolve()
    try:
        parent.relative_to(cache_dir().resolve())
    except ValueError:
        return None
    return parent.with_name(parent.name + ".peers")


def write_peer_layouts(uploads: dict[int, Path], work: Path, python: Path, log: Path) -> tuple[dict, dict]:
    """The peers' datasets from the source episodes: LeRobot 0.6.1's writer (``lerobot_writer.py``
    with the peers' Python: ``LeRobotDataset.create``, ``add_frame``, ``save_episode``,
    ``finalize``, LeRobot's default encoding), then ``lerobot-lance-convert`` of it. Kept beside
    cached footage (delete ``<footage>.peers`` to write them again)."""
    cache = peer_cache(uploads)
    home = cache or work
    lerobot, lance, record = home / "lerobot", home / "lance", home / "written.json"
    if cache is not None and record.exists():
        written = json.loads(record.read_text())
        return {"robodata": "", "lerobot": str(lerobot), "lance": str(lance)}, {**written, "cached": True}
    partial = home.with_name(home.name + ".partial") if cache is not None else home
    shutil.rmtree(partial / "lerobot", ignore_errors=True)
    shutil.rmtree(partial / "lance", ignore_errors=True)
    partial.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log, "a") as err:
        done = subprocess.run(
            [str(python), str(WRITER), str(partial / "lerobot"), *[str(uploads[k]) for k in sorted(uploads)]],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            check=False,
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith(WRITTEN_PREFIX)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{WRITER.name} failed (exit code {done.returncode}); see {log}")
    written = {"lerobot_writer": time.perf_counter() - start, "writer": json.loads(lines[-1][len(WRITTEN_PREFIX) :])}
    start = time.perf_counter()
    _convert(python, partial / "lerobot", partial / "lance", log)
    written["lerobot_lance_convert"] = time.perf_counter() - start
    (partial / "written.json").write_text(json.dumps(written, indent=2))
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
        partial.rename(cache)
    return {"robodata": "", "lerobot": str(lerobot), "lance": str(lance)}, {**written, "cached": False}


def _convert(python: Path, lerobot: Path, lance: Path, log: Path) -> None:
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


def prepare_peer_layouts(
    uri: str,
    version: int,
    work: Path,
    python: Path,
    episodes_per_file: int,
    log: Path,
    storage_options: dict | None = None,
) -> tuple[dict[str, str], dict[str, float]]:
    """The peers' copies of a given dataset without its source frames (``--dataset``):
    ``export-lerobot --rate camera`` (LeRobot v3.0, AV1 as LeRobot encodes) and
    ``lerobot-lance-convert`` of that export. The benchmark's own footage goes through
    ``write_peer_layouts`` instead."""
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
    _convert(python, lerobot, lance, log)
    return (
        {"robodata": uri, "lerobot": str(lerobot), "lance": str(lance)},
        {"export_lerobot": exported, "lerobot_lance_convert": time.perf_counter() - start - exported},
    )


def _root_kind(system: System) -> str:
    return {"robodata": "robodata", "robodata-compat": "robodata", "lerobot": "lerobot", "lancedb": "lance"}[
        system.runner
    ]


def _warmup(system: System, paired: np.ndarray, rows: int) -> list[int]:
    row = rows // 2
    return [row] if system.runner.startswith("robodata") else [int(paired[row])]


def _run(
    system: System,
    roots: dict,
    python: Path,
    measurements: list[dict],
    warmup: list[int],
    log: Path,
    nice: int,
    size: tuple[int, int] | None = None,
    **options,
) -> dict:
    import sys

    interpreter = Path(sys.executable) if system.runner.startswith("robodata") else python
    job = {**job_for(system, roots[_root_kind(system)], measurements, warmup, size), **options}
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
    """cProfile (calling thread only) the robodata path, with one decode thread, and the peer of
    each missed aim on the same inputs; attach the split of time to the aim as ``why``. D is
    profiled through the batched read each DataLoader worker runs (``__getitems__``), at the
    aim's size; the time to the first batch through opening the dataset and reading one batch."""
    by_key = {s.key: s for s in SYSTEMS}
    profiles: dict[str, dict] = {}
    cache: dict[tuple[str, str, tuple[int, int] | None], dict] = {}
    kinds = {"A": "sample", "B": "batch", "C": "window", "D": "batch", "first-batch": "open"}
    inputs: dict[str, Any] = {
        "sample": rng.integers(0, rows, 6),
        "batch": [rng.integers(0, rows, cfg.batch_size)],
        "window": rng.integers(0, rows, 4),
    }
    inputs["open"] = inputs["batch"]
    for aim in aims:
        scenario = aim.get("scenario")
        letter, size_name = split_key(scenario) if scenario else (None, None)
        if aim["met"] or letter not in kinds:
            continue
        size = next((s for s in cfg.sizes if s is not None), None) if size_name else None
        kind = kinds[letter]
        for key in (aim["ours"], aim["against"]):
            if (kind, key, size) in cache:
                continue
            system = by_key[key]
            own = system.runner.startswith("robodata")
            index = (lambda v: [int(i) for i in v]) if own else (lambda v: [int(i) for i in paired[np.asarray(v)]])
            measurement: dict[str, Any] = {
                "name": f"profile-{kind}",
                "kind": "profile",
                "of": kind,
                "frames": cfg.window_frames,
                **window,
            }
            if kind in ("batch", "open"):
                measurement["batches"] = [index(b) for b in inputs[kind]]
            else:
                measurement["indices"] = index(inputs[kind])
            options = (own_options or {}) if own else {}
            answer = _run(system, roots, python, [measurement], [], log, nice, size=size, concurrency=1, **options)
            m = answer["measurements"][0]
            at = f" at {size[0]}x{size[1]}" if size else ""
            name = "robodata" if key == "robodata" and letter in ("A", "B", "C") else system.label
            label = f"{name} ({kind}{at}{', 1 decode thread' if own else ''})"
            cache[(kind, key, size)] = profile_from_own_times(label, m["seconds_per_call"], m["own_seconds"]).to_dict()
        ours, theirs = cache[(kind, aim["ours"], size)], cache[(kind, aim["against"], size)]
        via = {
            "D": "each DataLoader worker runs the batched read: ",
            "first-batch": "open + first batch in one process: ",
        }
        aim["why"] = (
            f"{via.get(letter, '')}{Profile(**ours).sentence()}; {Profile(**theirs).sentence()}; one-thread cost "
            f"ratio peer / robodata {theirs['seconds'] / ours['seconds']:.2f}x"
        )
        profiles[aim["key"]] = {"robodata": ours, "peer": theirs}
    return profiles
