"""report.md from a run's results (the same dict results.json holds)."""

from __future__ import annotations

from benchmarks.loader import format_throughput

SECTIONS = (
    "## Aims",
    "## Scenarios A, B, C",
    "## Storage and picture quality",
    "## GOP-size sweep",
    "## Ingest",
    "## Training DataLoader",
    "## Where the time goes",
    "## Method",
    "## Figures",
)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _n(value: float, digits: int = 2) -> str:
    return f"{value:,.{digits}f}"


def headline_table(results: dict) -> str:
    """The aims as a Markdown table: target, measured, met (and by how much it was missed)."""
    rows = []
    for aim in results["aims"]:
        verdict = "yes" if aim["met"] else f"no (short by {aim['missed_by']:.1%})"
        rows.append([aim["aim"], f"{aim['comparison']} {_n(aim['target'])}", _n(aim["measured"]), verdict])
    return _table(["aim", "target", "measured", "met"], rows)


def scenario_table(results: dict) -> str:
    rows = [
        [
            s["scenario"],
            s["description"],
            str(s["trials"]),
            _n(s["robodata_per_s"], 1),
            _n(s["baseline_per_s"], 1),
            f"**{_n(s['ratio'])}x**",
            _n(s["robodata_median_ms"], 1),
            _n(s["baseline_median_ms"], 1),
        ]
        for s in results["scenarios"]
    ]
    header = [
        "",
        "scenario",
        "trials",
        "robodata samples/s",
        "LeRobot layout samples/s",
        "ratio",
        "robodata median ms",
        "LeRobot median ms",
    ]
    return _table(header, rows)


def sweep_table(results: dict) -> str:
    rows = [
        [
            str(r["gop_size"]),
            _n(r["robodata_vs_jpeg_bytes"], 3),
            _n(r["robodata_psnr_db"], 1),
            f"q{r['jpeg_quality']} {r['jpeg_subsampling']} ({_n(r['jpeg_psnr_db'], 1)} dB)",
            _n(r["single_frame_fps"], 1),
            _n(r["batched_fps"], 1),
            _n(r["decode_bound_fps"], 1),
            _n(r["batched_vs_bound"]),
            _n(r["single_vs_bound"]),
            str(r["gops_of_read_camera"]),
            _n(r["ingest_frames_per_s"], 0),
        ]
        for r in results["sweep"]
    ]
    header = [
        "G",
        "bytes / JPEG",
        "PSNR dB",
        "matched JPEG (PSNR)",
        "single fps",
        "batched fps",
        "decode bound fps",
        "batched / bound",
        "single / bound",
        "GOPs read from",
        "ingest fps",
    ]
    return _table(header, rows)


def storage_table(results: dict) -> str:
    s = results["storage"]
    rows = [
        [
            "robodata (H.264, G=" + str(results["dataset"]["gop_size"]) + ")",
            f"{s['robodata_video_bytes']:,}",
            _n(s["robodata_psnr_db"], 1) if "robodata_psnr_db" in s else "n/a",
        ],
        [
            "LeRobot layout (" + _encoding(results) + ")",
            f"{s['baseline_video_bytes']:,}",
            _n(s["baseline_psnr_db"], 1) if "baseline_psnr_db" in s else "n/a",
        ],
    ]
    if "jpeg_bytes" in s:
        jpeg = f"JPEG per frame, quality {s['jpeg_quality']} {s['jpeg_subsampling']}"
        rows.append([jpeg, f"{round(s['jpeg_bytes']):,}", _n(s["jpeg_psnr_db"], 1)])
    return _table(["storage", "video bytes", "PSNR dB vs source"], rows)


def _encoding(results: dict) -> str:
    e = results["baseline"]["encoding"]
    return (
        f"{e.get('codec', '?')} g={e.get('g', '?')} crf={e.get('crf', '?')} {e.get('pix_fmt', '')} "
        f"@ {e.get('fps', '?')} fps"
    )


def render_report(results: dict) -> str:
    """The whole report.md."""
    m, d, b, ing = results["machine"], results["dataset"], results["baseline"], results["ingest"]
    s = results["storage"]
    parts = [
        "# robodata benchmark report",
        f"Measured on **{m['cpu_count']} CPUs** ({m['processor']}, {m['platform']}; Python {m['python']}, "
        f"pylance {m['packages']['pylance']}, PyAV {m['packages']['av']}). The machine is shared, so absolute "
        f"figures are noisy (load average {m['load_average_at_start']} at start, {m['load_average_at_end']} at end); "
        "ratios come from interleaved measurements in one run. Batched figures and the decode bound scale with cores.",
        f"Reproduce: `{results['command']}` (wall time {_n(m['wall_seconds'] / 60, 1)} min).",
        f"Dataset: `{d['uri']}` version {d['version']}: {d['episodes']} episodes, {d['rows']:,} rows at "
        f"{d['control_hz']:g} Hz, cameras {', '.join(f'{c} {v}' for c, v in d['cameras'].items())}, "
        f"{d['codec']} G={d['gop_size']}. Baseline: {b['layout']} layout exported from it by "
        f"`robodata.lerobot.export_lerobot` ({_encoding(results)}, {b['video_files']} MP4 files, "
        f"{_n(b['episodes_per_video_file'], 1)} episodes per file, exported in {_n(b['export_seconds'], 1)} s).",
        SECTIONS[0],
        headline_table(results),
        SECTIONS[1],
        "Medians over trials; robodata and baseline calls alternate within each trial so load affects both. "
        "Ratio = robodata samples/s / baseline samples/s.",
        scenario_table(results),
        _storage_matched(results),
        SECTIONS[2],
        storage_table(results),
        f"robodata / LeRobot layout bytes: **{_n(s['robodata_vs_baseline_bytes'], 3)}x**. The exporter encodes "
        f"robodata's decoded frames, so the baseline's PSNR against its own input is "
        f"{_n(s['baseline_psnr_vs_robodata_db'], 1)} dB; against the source it also carries robodata's loss. "
        f'The baseline is exported at the camera rate (`rate="camera"`, {_n(b["fps"], 0)} fps), as LeRobot '
        "records: one LeRobot frame per camera frame, each camera frame once in its MP4, state and action from the "
        "robodata row nearest in time. Each robodata row is paired with the baseline frame showing the same camera "
        "frame, so both sides decode the same picture.",
        SECTIONS[3],
        f"Each G re-encodes the same {results['config']['sweep_episodes']} sample episodes of "
        f"{results['config']['sweep_seconds']:g} s. Bytes are relative to one JPEG per camera frame at the lowest "
        "quality (4:2:0 or 4:4:4 chroma, whichever is smaller) whose mean PSNR reaches robodata's at that G. "
        "Reads use the largest camera; decode bound = "
        "sequential decode frames/s on all cores x 2/(G+1). The bound assumes every read decodes its own half GOP: "
        "when the read camera has few GOPs (column 'GOPs read from'), rows of one batch share GOPs that decode once, "
        "and an episode's last GOP is short, so large G can beat the bound.",
        sweep_table(results),
        SECTIONS[4],
        f"A {ing['cameras']}-camera episode of {_n(ing['episode_seconds'], 1)} s ingests (decode source, encode G="
        f"{ing['gop_size']} GOPs, commit to Lance) in {_n(ing['seconds_per_episode'], 2)} s: "
        f"**{_n(ing['frames_per_s'], 0)} camera frames/s, {_n(ing['realtime_multiple'], 2)}x real time** "
        f"(median of {ing['episodes']} episodes).",
        SECTIONS[5],
        "A real `torch.utils.data.DataLoader` (spawned workers) over robodata's map-style adapter, whose "
        "`__getitems__` reads each batch with one `get_frames`, against the same DataLoader over the "
        "LeRobot-layout baseline reader fed one sample at a time; all cameras, random order. Steady samples/s "
        "after the first batch (worker start-up is in 'first batch s'). `robodata bench loader` runs a longer "
        "grid and the resident-memory run.",
        format_throughput(results["loader"]) if results["loader"] else "Not measured: install the `torch` extra.",
        SECTIONS[6],
        _misses(results),
        SECTIONS[7],
        _method(results),
        SECTIONS[8],
        "\n".join(f"![{name}]({file})" for name, file in results["plots"].items()),
    ]
    return "\n\n".join(parts) + "\n"


def missed_aim_lines(aims: list[dict]) -> list[str]:
    """One Markdown bullet per missed aim: measured, target, shortfall and the profile's why."""
    lines = []
    for aim in aims:
        if aim["met"]:
            continue
        why = aim.get("why", "no read path to profile: the figure is the measured storage itself")
        lines.append(
            f"- **{aim['aim']}**: measured {_n(aim['measured'])} against {aim['comparison']} "
            f"{_n(aim['target'])}, short by {aim['missed_by']:.1%}. Why (cProfile): {why}."
        )
    return lines


def _misses(results: dict) -> str:
    lines = missed_aim_lines(results["aims"])
    if not lines:
        return "Every aim was met in this run."
    m = results["machine"]
    lines.append(
        f"\nLoad average {m['load_average_at_start']} at start and {m['load_average_at_end']} at end on "
        f"{m['cpu_count']} CPUs: where it exceeds the CPU count, other processes take cores from the "
        "parallel (batched) reads, and a thread speedup below the thread count shows it."
    )
    lines.append("Full profiles (top functions by own time) are in results.json under `profiles`.")
    return "\n".join(lines)


def _method(results: dict) -> str:
    b = results["baseline"]
    return "\n".join(
        [
            "- The baseline reader is a **re-implementation** of LeRobot's PyAV video backend, not LeRobot itself "
            "(`benchmarks/lerobot_baseline.py`). It mirrors, from huggingface/lerobot (main, Aug 2026): "
            "`lerobot.datasets.video_utils.decode_video_frames_pyav` (successor of "
            '`decode_video_frames_torchvision(..., backend="pyav")`): per sample, open the camera\'s MP4, seek backward '
            "to the keyframe before the timestamp (episode `from_timestamp` + frame timestamp), decode forward, take the "
            "nearest frame and reject it if further than `tolerance_s = 1e-4`; and `LeRobotDataset.__getitem__` "
            "(`DatasetReader.get_item`, `_get_query_indices`, `_get_query_timestamps`, `_query_videos`, one thread per "
            "camera). Frames are returned as uint8 numpy arrays on both sides. The newest release on the package "
            "index, lerobot 0.4.4, reads through `decode_video_frames_torchvision` with the same seek-and-decode-forward "
            "logic but decodes the cameras one after another; mirroring main, with a thread per camera, is the faster, "
            "conservative baseline.",
            f"- The `lerobot` package: {b['lerobot_package']}. Where it is importable the harness also measures "
            '`LeRobotDataset(root, video_backend="pyav")[idx]` (scenario A3-lerobot); it is not installed here because '
            "it pulls in a large dependency set.",
            "- A1 reads one camera frame (robodata `get_frames([i], cameras=camera)`; baseline a one-camera sample). "
            "A3 is `ds[i]` against `LeRobotDataset[idx]`. B reads random batches with `get_frames(..., "
            "concurrency=cpu_count)` plus the rows' state and action, against the baseline reading the same rows one "
            "by one (its DataLoader path). C reads 8 consecutive camera frames of every camera per sample: "
            "`get_windows` against LeRobot's delta_timestamps path.",
            "- The baseline is a camera-rate export (one LeRobot frame per camera frame, as LeRobot records). Each "
            "robodata row is paired with the baseline sample of the same episode showing the same camera frame (by the "
            "frame times the export records), so both sides decode the same picture.",
            "- When an aim is missed, both sides are profiled with cProfile in one Python thread (cProfile does not see "
            "worker threads): robodata with `concurrency=1` and single-threaded decoders, the baseline with its cameras "
            "one after another (its AV1 decoder, dav1d, still uses its own threads, as LeRobot leaves the thread count "
            "at auto). The time is split into video decode, YUV to RGB, file open/seek/demux, Lance reads, Arrow rows, "
            "waiting on threads and Python.",
        ]
    )


def _storage_matched(results: dict) -> str:
    m = results["storage_matched"]
    if m is None:
        return "No G of the sweep stores a camera frame in as few bytes as the LeRobot layout at its PSNR."
    return (
        f"At matched storage: the smallest sweep G within the LeRobot layout's bytes per camera frame "
        f"({_n(m['baseline_bytes_per_frame'] / 1000, 1)} kB) and PSNR is **G={m['gop_size']}** "
        f"({_n(m['robodata_bytes_per_frame'] / 1000, 1)} kB, {_n(m['robodata_psnr_db'], 1)} dB); its single-frame "
        f"random reads ran at {_n(m['robodata_single_frame_fps'], 1)}/s against the baseline's A1 "
        f"{_n(m['baseline_single_per_s'], 1)}/s: **{_n(m['ratio'])}x** (same run, other sample episodes, "
        "not interleaved)."
    )
