"""report.md and the plot of a peers run: robodata, LeRobot 0.6.1 and LanceDBDataset side by side.

>>> print(side_by_side_table(json.loads(Path("bench_out/results.json").read_text())))  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.peers.peer_scenarios import AIMS, SYSTEMS
from benchmarks.report import headline_table, missed_aim_lines

COLUMNS = [(s.key, s.label) for s in SYSTEMS]


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _n(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _ratio(row: dict, group: str, target: float) -> str:
    versus = row.get(f"vs_{group}")
    if versus is None:
        return "n/a"
    verdict = "met" if versus["ratio"] >= target else f"missed by {1 - versus['ratio'] / target:.0%}"
    return f"**{versus['ratio']:.2f}x** (aim {target:g}x, {verdict})"


def side_by_side_table(results: dict) -> str:
    """Samples/s of every system per scenario and robodata's ratios against each peer with the aims
    (against LeRobot: its faster backend in that scenario)."""
    rows = []
    for row in results["ratios"]:
        lerobot_aim, lance_aim = AIMS.get(row["scenario"], (1.0, 1.0))
        rows.append(
            [f"{row['scenario']} {row['description']}"]
            + [_n(row["per_s"].get(key)) for key, _ in COLUMNS]
            + [_ratio(row, "lerobot", lerobot_aim), _ratio(row, "lancedb", lance_aim)]
        )
    storage = results.get("storage") or {}
    if storage:
        rows.append(
            ["bytes per camera frame"]
            + [_bytes(storage, key) for key, _ in COLUMNS]
            + [_storage_ratio(storage, "lerobot-torchcodec"), _storage_ratio(storage, "lancedb")]
        )
        camera = storage.get("quality_camera", "top")
        rows.append(
            [f"PSNR of `{camera}` vs the source, dB"]
            + [_psnr(storage, key) for key, _ in COLUMNS]
            + [_psnr_delta(storage, "lerobot-torchcodec"), _psnr_delta(storage, "lancedb")]
        )
    header = ["scenario (samples/s)"] + [label for _, label in COLUMNS] + ["robodata / LeRobot", "robodata / LanceDB"]
    return _table(header, rows)


def _bytes(storage: dict, key: str) -> str:
    figures = storage.get(key) or storage.get("lerobot-torchcodec" if key == "lerobot-pyav" else "")
    return f"{figures['bytes_per_frame']:,.0f}" if figures else "n/a"


def _storage_ratio(storage: dict, key: str) -> str:
    ours, theirs = storage.get("robodata"), storage.get(key)
    if not ours or not theirs:
        return "n/a"
    ratio = ours["bytes_per_frame"] / theirs["bytes_per_frame"]
    return f"**{ratio:.2f}x** bytes ({'no more' if ratio <= 1 else 'more'})"


def _psnr(storage: dict, key: str) -> str:
    figures = storage.get(key) or storage.get("lerobot-torchcodec" if key == "lerobot-pyav" else "") or {}
    value = figures.get("psnr_top_db", figures.get("psnr_vs_robodata_top_db"))
    return _n(value, 2)


def _psnr_delta(storage: dict, key: str) -> str:
    ours, theirs = storage.get("robodata") or {}, storage.get(key) or {}
    if "psnr_top_db" not in ours or "psnr_top_db" not in theirs:
        return "n/a"
    return f"**{ours['psnr_top_db'] - theirs['psnr_top_db']:+.2f} dB**"


def loader_table(results: dict) -> str:
    """Scenario D in detail: steady samples/s, time to the first batch, every round's figure."""
    summary = results["summary"].get("D", {})
    rows = [
        [
            label,
            _n(summary[key]["per_s"]),
            _n(summary[key]["first_batch_s"], 2),
            ", ".join(_n(v) for v in summary[key]["rounds"]),
        ]
        for key, label in COLUMNS
        if key in summary
    ]
    return _table(["system", "steady samples/s", "first batch s", "samples/s per round"], rows)


def render_peer_report(results: dict) -> str:
    """The whole report.md of a peers run."""
    m, d, f = results["machine"], results["dataset"], results["footage"]
    systems = results["systems"]
    versions = "; ".join(
        f"{v['label']}: " + ", ".join(f"{k} {x}" for k, x in v["versions"].items()) for v in systems.values()
    )
    same = results["loader_same_rows"]
    parts = [
        "# robodata against LeRobot 0.6.1 and LanceDBDataset",
        f"Measured on **{m['cpu_count']} CPUs** ({m['processor']}; Python {m['python']} for robodata). The machine is "
        f"shared: load average {m['load_average_at_start']} at the start, {m['load_average_at_end']} at the end. "
        "Ratios come from interleaved rounds (every system reads the same rows each round, the order of systems "
        "rotating), medians over rounds.",
        f"Reproduce: `{results['command']}` (wall time {m['wall_seconds'] / 60:.1f} min).",
        f"Footage: **{f['source']}**. Dataset `{d['uri']}` version {d['version']}: {d['episodes']} episodes, "
        f"{d['rows']:,} rows at {d['control_hz']:g} Hz, cameras "
        f"{', '.join(f'{c} {v}' for c, v in d['cameras'].items())}, G={d['gop_size']} ({d['codec']}).",
        f"Peers: `robodata export-lerobot --rate camera` of that version (LeRobot v3.0, AV1 g=2 crf 30 as LeRobot "
        f"encodes) in {results['layouts_seconds']['export_lerobot']:.1f} s, and `lerobot-lance-convert` of the "
        f"export in {results['layouts_seconds']['lerobot_lance_convert']:.1f} s. Versions: {versions}.",
        "## Side by side",
        side_by_side_table(results),
        "## Aims",
        headline_table(results),
        "## D: the training DataLoader",
        f"`torch.utils.data.DataLoader`, {results['config']['loader_workers']} spawned workers, batches of "
        f"{results['config']['batch_size']}, every camera: robodata's `make_dataloader` (its `__getitems__` reads "
        "a batch with one `get_frames`, GOPs prefetched), LeRobotDataset (one `__getitem__` per sample, "
        "default collate), LanceDBDataset (`__getitems__`, `lance_mp_context()`). Same batches on every system "
        f"(robodata's loader delivered the planned rows: {all(c['same_rows'] for c in same)}). Steady = samples "
        "after the first batch / time after it.",
        loader_table(results),
        "## Where the time goes",
        _misses(results),
        *_sweep_section(results),
        "## Method",
        _method(results),
        "## Figures",
        "\n".join(f"![{name}]({file})" for name, file in results["plots"].items()),
    ]
    return "\n\n".join(parts) + "\n"


def _sweep_section(results: dict) -> list[str]:
    sweep = results.get("gop_crf_sweep")
    if not sweep:
        return []
    limits, chosen = sweep["limits"], sweep["chosen"]
    bound = (
        f"within LeRobot's {limits['max_bytes_per_frame']:,.0f} bytes per frame and at least its "
        f"{limits['min_psnr_db']:.2f} dB"
        if limits.get("max_bytes_per_frame") and limits.get("min_psnr_db")
        else "(no LeRobot figures to bound it)"
    )
    verdict = f"**G={chosen['gop_size']}, CRF {chosen['crf']}**" if chosen else "no point qualifies"
    return [
        "## G x CRF sweep",
        "The same footage ingested at every (G, CRF); D is robodata's DataLoader as above (one process per "
        "point, not interleaved with the peers), PSNR against the source on the same rows. A point is on the "
        "frontier when no other has at least its D throughput, at most its bytes and at least its PSNR, and "
        f"beats it on one. Highest D throughput on the frontier {bound}: {verdict}.",
        sweep["table"],
    ]


def _misses(results: dict) -> str:
    lines = missed_aim_lines(results["aims"])
    if not lines:
        return "Every aim was met in this run."
    lines.append(
        "\nProfiles are cProfile of the calling thread in each system's own process (robodata with one "
        "decode thread; LeRobot decodes its cameras on threads that cProfile does not see, so its "
        "'waiting on worker threads' share is its decode). Top functions are in results.json."
    )
    return "\n".join(lines)


def _method(results: dict) -> str:
    cfg = results["config"]
    return "\n".join(
        [
            f"- {cfg['rounds']} rounds. Per round and system one process reads A ({cfg['single_samples']} samples, "
            f"one `ds[i]` each), B ({cfg['batches']} random batches of {cfg['batch_size']}: robodata "
            "`get_frames(concurrency=cpu_count)` plus the rows' state and action, LanceDBDataset "
            "`__getitems__`, LeRobotDataset one `ds[i]` per row as its DataLoader does) and C "
            f"({cfg['windows']} windows of {cfg['window_frames']} consecutive camera frames x every camera: robodata "
            "`get_windows`, the peers `delta_timestamps` of k / fps); another process runs D. Each process warms up "
            "on one sample before timing.",
            "- Peers run in their own venv (`scripts/peers.sh`: Python 3.12, lerobot[dataset]==0.6.1, "
            "lerobot-lancedb==0.3.1, torchcodec on Debian's FFmpeg 5) through `benchmarks/peers/peer_runner.py`, "
            "`return_uint8=True`; robodata runs the same runner with its own Python.",
            "- Rows pair by the camera frame they show (`benchmarks/pairing.py`), so every system decodes the "
            "same pictures; at the camera rate one robodata row is one LeRobot frame when control and camera rates "
            "match (gym-aloha: 50 Hz both).",
            "- Bytes per camera frame: robodata's GOP bytes; LeRobot's MP4 bytes; LanceDB's videos.lance folder. "
            f"PSNR against the source frames on {results['storage'].get('quality_rows', 0)} random rows "
            "(gym-aloha footage is stored losslessly, so the source is the rendered image).",
        ]
    )


def write_peer_plot(results: dict, path: Path) -> Path:
    """Samples/s per scenario and system (log scale), aims as ratios in the labels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["ratios"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(COLUMNS)
    for i, (key, label) in enumerate(COLUMNS):
        values = [row["per_s"].get(key, 0.0) for row in rows]
        ax.bar([x + i * width for x in range(len(rows))], values, width, label=label)
    ax.set_xticks([x + width * (len(COLUMNS) - 1) / 2 for x in range(len(rows))])
    ax.set_xticklabels([row["scenario"] for row in rows])
    ax.set_yscale("log")
    ax.set_ylabel("samples/s (median of rounds)")
    ax.set_title(f"robodata vs LeRobot 0.6.1 and LanceDBDataset ({results['footage']['source']} footage)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
