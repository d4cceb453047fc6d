"""report.md and the plot of a peers run: robodata, LeRobot 0.6.1 and LanceDBDataset side by side.

>>> print(side_by_side_table(json.loads(Path("bench_out/results.json").read_text())))  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.peers.gop_crf_sweep import BOUND_WITHIN
from benchmarks.peers.peer_scenarios import OURS, PATH_NAMES, PEER_GROUPS, SYSTEMS, aim_target, split_key
from benchmarks.report import headline_table, missed_aim_lines

LABELS = {s.key: s.label for s in SYSTEMS}
UNITS = {"A": "samples/s", "B": "samples/s", "C": "windows/s", "D": "samples/s"}
SHORT = {
    "A": "A one sample, every camera",
    "B": "B random batches of {batch_size}",
    "C": "C {window_frames}-frame windows x every camera",
    "D": "D DataLoader, {loader_workers} workers, batch {batch_size}",
}


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _n(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _verdict(ratio: float, target: float | None, at_least: bool = True) -> str:
    if target is None:
        return f"{ratio:.2f}x"
    met = ratio >= target if at_least else ratio <= target
    miss = "" if met else f", missed by {abs(1 - ratio / target):.0%}"
    return f"**{ratio:.2f}x** (aim {'' if at_least else '<= '}{target:g}x{', met' if met else miss})"


def d_order(results: dict, ours: str) -> str:
    """The order a robodata path reads D in: make_dataloader's ``shuffle`` (the peers get its
    batches); the LeRobot user's path its own ``item_sampler`` (``order`` "block") or
    ``DataLoader(shuffle=True)`` (uniform)."""
    if results["config"].get("order", "global") != "block":
        return "uniform order"
    return "decode-once order (item_sampler)" if ours.startswith("robodata-compat") else "decode-once order"


def peer_columns(results: dict) -> list[str]:
    """The peers measured in this run, LeRobot's backends first."""
    present = set(results["systems"]) if "systems" in results else {k for r in results["ratios"] for k in r["per_s"]}
    return [k for group in PEER_GROUPS.values() for k in group if k in present]


def side_by_side_table(results: dict) -> str:
    """One row per scenario and robodata path: the peers' figures, robodata's, its ratios to each
    peer group with the issue's aims (against LeRobot: its faster backend in that scenario), the
    in-process decode bound and robodata's share of it; time to the first batch; bytes and PSNR."""
    sizes = results["config"]
    peers = peer_columns(results)
    header = ["scenario", *[LABELS.get(k, k) for k in peers], "robodata"] + [
        "robodata / LeRobot",
        "robodata / LanceDB",
        "decode bound",
        "robodata / bound",
    ]
    rows = []
    for row in results["ratios"]:
        name, size = split_key(row["scenario"])
        at = f" @ {size}x{size}" if size else ""
        base = SHORT.get(name, name).format(**sizes) + at
        for ours in OURS if name == "D" else ("robodata",):
            if ours not in row["per_s"]:
                continue
            versus = row["versus"].get(ours, {})
            path = f", {PATH_NAMES[ours].removeprefix('robodata ')}, {d_order(results, ours)}" if name == "D" else ""
            cells = [f"{base}{path} ({UNITS.get(name, 'per s')})"]
            cells += [_n(row["per_s"].get(k)) for k in peers]
            cells.append(_n(row["per_s"][ours]))
            for group in PEER_GROUPS:
                v = versus.get(group)
                cells.append(_verdict(v["ratio"], aim_target(row["scenario"], ours, group)) if v else "n/a")
            bound = row.get("bound")
            cells += [_n(bound), f"{row['of_bound'][ours]:.0%}" if bound else ""]
            rows.append(cells)
        if name == "D" and row.get("first_batch_s"):
            first = row["first_batch_s"]
            lerobot = first.get("lerobot-torchcodec")
            for ours in ("robodata", "robodata-compat"):
                if ours not in first:
                    continue
                cells = [f"{base}, time to first batch, {PATH_NAMES[ours].removeprefix('robodata ')} (s)"]
                cells += [_n(first.get(k), 2) for k in peers]
                cells.append(_n(first[ours], 2))
                if lerobot and not size:
                    met = first[ours] <= lerobot
                    cells.append(f"**{first[ours] / lerobot:.2f}x** (aim <= 1x, {'met' if met else 'missed'})")
                else:
                    cells.append(f"{first[ours] / lerobot:.2f}x" if lerobot else "n/a")
                lance = first.get("lancedb")
                cells += [f"{first[ours] / lance:.2f}x" if lance else "n/a", "", ""]
                rows.append(cells)
    storage = results.get("storage") or {}
    if storage:
        cells = ["bytes per camera frame"] + [_bytes(storage, k) for k in peers] + [_bytes(storage, "robodata")]
        cells += [_storage_ratio(storage, "lerobot-torchcodec"), _storage_ratio(storage, "lancedb"), "", ""]
        rows.append(cells)
        camera = storage.get("quality_camera", "top")
        cells = [f"PSNR of `{camera}` vs the source, dB"] + [_psnr(storage, k) for k in peers]
        cells += [
            _psnr(storage, "robodata"),
            _psnr_delta(storage, "lerobot-torchcodec"),
            _psnr_delta(storage, "lancedb"),
        ]
        rows.append(cells + ["", ""])
    return _table(header, rows)


def _bytes(storage: dict, key: str) -> str:
    figures = storage.get(key) or storage.get("lerobot-torchcodec" if key == "lerobot-pyav" else "")
    return f"{figures['bytes_per_frame']:,.0f}" if figures else "n/a"


def _storage_ratio(storage: dict, key: str) -> str:
    ours, theirs = storage.get("robodata"), storage.get(key)
    if not ours or not theirs:
        return "n/a"
    ratio = ours["bytes_per_frame"] / theirs["bytes_per_frame"]
    if key == "lerobot-torchcodec":
        return f"**{ratio:.2f}x** (aim <= 1x, {'met' if ratio <= 1 else 'missed'})"
    return f"{ratio:.2f}x"


def _psnr(storage: dict, key: str) -> str:
    figures = storage.get(key) or storage.get("lerobot-torchcodec" if key == "lerobot-pyav" else "") or {}
    value = figures.get("psnr_top_db", figures.get("psnr_vs_robodata_top_db"))
    return _n(value, 2)


def _psnr_delta(storage: dict, key: str) -> str:
    ours, theirs = storage.get("robodata") or {}, storage.get(key) or {}
    if "psnr_top_db" not in ours or "psnr_top_db" not in theirs:
        return "n/a"
    delta = ours["psnr_top_db"] - theirs["psnr_top_db"]
    if key == "lerobot-torchcodec":
        return f"**{delta:+.2f} dB** (aim >= 0, {'met' if delta >= 0 else 'missed'})"
    return f"{delta:+.2f} dB"


def loader_table(results: dict) -> str:
    """Scenario D in detail, at every size: steady samples/s, time to the first batch, share of
    the decode bound, every round's figure."""
    rows = []
    for row in results["ratios"]:
        name, size = split_key(row["scenario"])
        if name != "D":
            continue
        summary = results["summary"][row["scenario"]]
        for key, figures in summary.items():
            rows.append(
                [
                    f"{size}x{size}" if size else "native",
                    LABELS.get(key, key),
                    d_order(results, key) if key in OURS else "make_dataloader's batches",
                    _n(figures["per_s"]),
                    _n(figures.get("first_batch_s"), 2) if "first_batch_s" in figures else "",
                    f"{row['of_bound'][key]:.0%}" if row.get("bound") and key in row.get("of_bound", {}) else "",
                    ", ".join(_n(v) for v in figures["rounds"]),
                ]
            )
    header = ["size", "system", "order", "steady samples/s", "first batch s", "of bound", "samples/s per round"]
    return _table(header, rows)


def randomness_table(results: dict) -> str:
    """How random D's batches are, in D's order and in the uniform order with the same seed."""
    figures = results.get("batch_randomness")
    if not figures:
        return ""
    order = figures["order"]
    label = f"{order} (make_dataloader's and the peers' D" + (
        f", window {figures['window_rows']} rows)" if order == "block" else ")"
    )
    kinds = [(label, "planned")]
    if "compat" in figures:
        kinds.append(
            (f"block (LeRobotCompatDataset.item_sampler, window {figures['compat_window_rows']} rows)", "compat")
        )
    kinds.append(("uniform (shuffle='global', LeRobot's)", "uniform"))
    rows = []
    for name, key in kinds:
        f = figures[key]
        rows.append(
            [
                name,
                _n(f["distinct_episodes"]),
                _n(f["distinct_gops"]),
                _n(f["mean_max_rows_from_one_gop"], 2),
                str(f["max_rows_from_one_gop"]),
            ]
        )
    header = ["order", "distinct episodes / batch", "distinct GOPs / batch", "mean max rows from one GOP", "max"]
    return _table(header, rows)


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
        _peers_sentence(results) + f" Versions: {versions}.",
        f"At {_policy_size(results)} robodata reads by {results.get('size_path', 'n/a')}; the peers through "
        "`image_transforms=torchvision.transforms.v2.Resize(size)` (their documented transform, applied in the "
        "loader's workers). " + _rendition_sentence(results),
        "## Side by side",
        side_by_side_table(results),
        "## Aims",
        headline_table(results),
        "## D: the training DataLoader",
        f"`torch.utils.data.DataLoader`, {results['config']['loader_workers']} workers, batches of "
        f"{results['config']['batch_size']}, every camera, {results['config']['loader_batches']} batches a round, "
        f"in robodata's `make_dataloader` order (`shuffle={results['config'].get('order', 'global')!r}`): robodata's "
        "`make_dataloader` (spawned workers; its `__getitems__` reads a batch, each GOP decoded once by the worker "
        "its rows go to and its frames kept for their batches); robodata's "
        "`LeRobotCompatDataset(return_uint8=True)` and `(return_uint8=False)` (float) in "
        + (
            "`DataLoader(ds, sampler=ds.item_sampler(batch_size=B, num_workers=W, seed=S), batch_size=B, "
            "num_workers=W, multiprocessing_context=worker_context())` as `robodata-train` builds it for a LeRobot "
            "user (its own decode-once order from the same seed, spawned workers, PyTorch's default collate, "
            "lerobot-train's persistent workers); "
            if results["config"].get("order") == "block"
            else "`DataLoader(ds, batch_size, shuffle=True, num_workers, multiprocessing_context=worker_context())` "
            "as lerobot-train runs it (spawned workers, default collate); "
        )
        + "LeRobotDataset (one `__getitem__` per sample, default collate, spawned workers); "
        "LanceDBDataset (`__getitems__`, `lance_mp_context()`). Every LeRobot-facing DataLoader has "
        "lerobot-train 0.6.1's defaults, `prefetch_factor=4, persistent_workers=True`. LeRobot and LanceDB read make_dataloader's "
        "batches as lists; every loader delivered the rows planned for it: "
        f"{all(c['same_rows'] for c in same)}. "
        + (
            f"In the decode-once order both robodata paths read {results['config'].get('warm_epochs', 1)} whole "
            "epoch(s) first and then time the next epoch in full, its first batch too (a batch early in an "
            "epoch decodes GOPs for later ones); the peers time the batches after their first. "
            if results["config"].get("order") == "block"
            else "Steady = samples after the first batch / time after it. "
        )
        + "The decode bound: the same batches' frames "
        "decoded in one process from GOP bytes already in memory, one thread per core with its single-threaded "
        "decoder (RGB conversion included; at the policy's size the reader's own tasks: a stored rendition's GOPs "
        "where one fits, else the full decode scaled), taken as samples / (CPU seconds / cores): what the cores "
        "deliver doing nothing else, which a shared machine's wall clock cannot show. Each GOP the batches need "
        "is decoded once, as far as the last frame any of their rows wants: no reader of these rows decodes less.",
        loader_table(results),
        "How random D's batches are (what the decode-once order trades for its speed):",
        randomness_table(results),
        "## Where the time goes",
        _misses(results),
        *_sweep_section(results),
        "## Method",
        _method(results),
        "## Figures",
        "\n".join(f"![{name}]({file})" for name, file in results["plots"].items()),
    ]
    return "\n\n".join(parts) + "\n"


def _policy_size(results: dict) -> str:
    sizes = [s for s in results["config"].get("sizes", []) if s]
    return f"{sizes[0][0]}x{sizes[0][1]}" if sizes else "the policy's size"


def _peers_sentence(results: dict) -> str:
    seconds = results["layouts_seconds"]
    if results.get("peers_source", "").startswith("LeRobotDataset"):
        encoder = seconds.get("writer", {}).get("encoder", {})
        settings = ", ".join(f"{k} {v}" for k, v in encoder.items() if k in ("vcodec", "g", "crf", "pix_fmt", "preset"))
        cached = " (kept beside the cached footage)" if seconds.get("cached") else ""
        return (
            "Peers: written by LeRobot 0.6.1's own writer from the same source frames (`LeRobotDataset.create`, "
            f"`add_frame`, `save_episode`, `finalize`; its default encoding: {settings}) in "
            f"{seconds['lerobot_writer']:.0f} s, and `lerobot-lance-convert` of that in "
            f"{seconds['lerobot_lance_convert']:.0f} s{cached}."
        )
    return (
        "Peers: `robodata export-lerobot --rate camera` of the given version (LeRobot v3.0, AV1 g=2 crf 30) in "
        f"{seconds['export_lerobot']:.1f} s, and `lerobot-lance-convert` of the export in "
        f"{seconds['lerobot_lance_convert']:.1f} s (a given dataset has no source frames here)."
    )


def _rendition_sentence(results: dict) -> str:
    rendition = results.get("rendition")
    if rendition:
        extra = ""
        frames = (results.get("storage") or {}).get("robodata", {}).get("camera_frames")
        if rendition.get("bytes") and frames:
            extra = f", {rendition['bytes'] / frames:,.0f} bytes per camera frame on top of the full-resolution GOPs"
        return f"The dataset holds a training rendition at that size (added in {rendition['seconds']:.0f} s{extra})."
    return "The dataset holds no training rendition (this robodata cannot add one)."


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
    verdict = (
        f"**G={chosen['gop_size']}, CRF {chosen['crf']}, preset {chosen.get('preset') or 'n/a'}**"
        if chosen
        else "no point qualifies"
    )
    return [
        "## G x CRF x preset sweep",
        "The same footage ingested at every (G, CRF, preset). The random read is the CPU time of one uniformly "
        "random row's frames (every camera, one decode thread: GOP bytes, decode up to the frame, RGB), what a "
        "single sample (A) or a uniform shuffle pays per wanted frame; the decode bound is that of random batches "
        "of the footage (every GOP they need decoded once, as far as their last wanted frame, on every core, "
        "samples per CPU second per core); D is robodata's DataLoader in its decode-once order as above (one "
        "process per point, not interleaved with the peers); PSNR against the source on the same rows. A point is on the frontier when no other is at least as good on all of decode bound, "
        f"random read, bytes and PSNR and better on one. The frontier point {bound} with the cheapest random read, "
        f"within {1 - BOUND_WITHIN:.0%} of the best decode bound among them: {verdict}.",
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
            "`get_windows`, the peers `delta_timestamps` of k / fps), at native size and then at the policy's size "
            "(a second opened reader in the same process); another process runs D at both sizes. Each reader warms "
            "up on one sample before timing.",
            "- Peers run in their own venv (`scripts/peers.sh`: Python 3.12, lerobot[dataset]==0.6.1, "
            "lerobot-lancedb==0.3.1, torchcodec on Debian's FFmpeg 5) through `benchmarks/peers/peer_runner.py`, "
            "`return_uint8=True`; robodata runs the same runner with its own Python.",
            "- Rows pair by the camera frame they show (`benchmarks/pairing.py`), so every system decodes the "
            "same pictures; at the camera rate one robodata row is one LeRobot frame when control and camera rates "
            "match (gym-aloha: 50 Hz both).",
            "- Bytes per camera frame: robodata's GOP bytes; LeRobot's MP4 bytes; LanceDB's videos.lance folder. "
            f"PSNR against the source frames on {results['storage'].get('quality_rows', 0)} random rows "
            "(gym-aloha footage is stored losslessly, so the source is the rendered image); every system's frames "
            "are its own decode of its own encoding of those source frames.",
        ]
    )


def write_peer_plot(results: dict, path: Path) -> Path:
    """Samples/s per scenario and system (log scale), aims as ratios in the labels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["ratios"]
    present = {k for row in rows for k in row["per_s"]}
    columns = [(s.key, s.label) for s in SYSTEMS if s.key in present]
    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.8 / len(columns)
    for i, (key, label) in enumerate(columns):
        values = [row["per_s"].get(key, 0.0) for row in rows]
        ax.bar([x + i * width for x in range(len(rows))], values, width, label=label)
    ax.set_xticks([x + width * (len(columns) - 1) / 2 for x in range(len(rows))])
    ax.set_xticklabels([row["scenario"] for row in rows])
    ax.set_yscale("log")
    ax.set_ylabel("samples/s (median of rounds)")
    ax.set_title(f"robodata vs LeRobot 0.6.1 and LanceDBDataset ({results['footage']['source']} footage)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def readme_line(results: dict) -> str:
    """The README's one-line summary of a run (robodata / LeRobot and / LanceDB per scenario)."""
    rows = {row["scenario"]: row for row in results["ratios"]}
    parts = []
    for scenario, ours, label in (
        ("A", "robodata", "A"),
        ("B", "robodata", "B"),
        ("C", "robodata", "C"),
        ("D", "robodata", "D make_dataloader"),
        ("D", "robodata-compat", "D LeRobotCompatDataset"),
        ("D@224", "robodata", "D at 224x224"),
    ):
        versus = rows.get(scenario, {}).get("versus", {}).get(ours, {})
        if versus:
            ratios = "/".join(f"{versus[g]['ratio']:.1f}x" if g in versus else "n/a" for g in PEER_GROUPS)
            parts.append(f"{label} {ratios}")
    first = rows.get("D", {}).get("first_batch_s", {})
    if "robodata" in first and "lerobot-torchcodec" in first:
        parts.append(f"first batch {first['robodata']:.1f} s vs LeRobot {first['lerobot-torchcodec']:.1f} s")
    storage = results.get("storage") or {}
    mine, lerobot = storage.get("robodata") or {}, storage.get("lerobot-torchcodec") or {}
    if mine.get("bytes_per_frame") and lerobot.get("bytes_per_frame"):
        parts.append(f"{mine['bytes_per_frame'] / lerobot['bytes_per_frame']:.2f}x the bytes")
    if "psnr_top_db" in mine and "psnr_top_db" in lerobot:
        parts.append(f"{mine['psnr_top_db'] - lerobot['psnr_top_db']:+.1f} dB")
    d = results["dataset"]
    return (
        f"benchmark vs LeRobot 0.6.1 / LanceDBDataset (`robodata bench OUT --peers VENV`, {results['footage']['source']} "
        f"{d['episodes']} episodes / {d['rows']:,} rows, peers by LeRobot's writer, G={d['gop_size']}, "
        f"{results.get('date', '')}): " + ", ".join(parts)
    )


def run_header(results: dict) -> str:
    """The command, date, footage and load of a run: the line above its pasted table."""
    m, d = results["machine"], results["dataset"]
    return (
        f"`{results['command']}` ({results.get('date', '')}, wall {m['wall_seconds'] / 60:.0f} min; "
        f"{results['footage']['source']} {d['episodes']} episodes, {d['rows']:,} rows, cameras "
        f"{', '.join(f'{c} {v}' for c, v in d['cameras'].items())}; robodata G={d['gop_size']} CRF "
        f"{(results.get('ingest') or {}).get('crf', 'as stored')}; {m['cpu_count']} CPUs shared: load "
        f"average {m['load_average_at_start']} at the start, {m['load_average_at_end']} at the end; "
        f"{results['config']['rounds']} interleaved rounds, medians)"
    )
