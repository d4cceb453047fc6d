"""The report's figures as PNG files (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # the backend must be chosen first


def storage_vs_gop(sweep: list[dict], path: Path, baseline_vs_jpeg: float | None = None) -> Path:
    """Video bytes relative to JPEG at matched PSNR, per G, with robodata's PSNR on each point."""
    sizes = [r["gop_size"] for r in sweep]
    ratios = [r["robodata_vs_jpeg_bytes"] for r in sweep]
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot(sizes, ratios, "o-", label="robodata (H.264 closed GOPs)")
    for size, ratio, row in zip(sizes, ratios, sweep, strict=True):
        ax.annotate(
            f"{row['robodata_psnr_db']:.1f} dB",
            (size, ratio),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            fontsize=7,
        )
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=1, label="aim at G=8: 0.5x JPEG")
    if baseline_vs_jpeg is not None:
        ax.axhline(baseline_vs_jpeg, color="tab:red", linestyle=":", label="LeRobot layout (AV1, g=2)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("GOP size G (frames)")
    ax.set_ylabel("video bytes / JPEG bytes at matched PSNR")
    ax.set_title("Storage against one JPEG per frame")
    ax.legend(fontsize=8)
    return _save(fig, path)


def throughput_vs_gop(sweep: list[dict], path: Path, cpu_count: int) -> Path:
    """Single-frame and batched random-read frames/s per G, with the decode bound."""
    sizes = [r["gop_size"] for r in sweep]
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot(sizes, [r["batched_fps"] for r in sweep], "o-", label=f"batched ({sweep[0]['batch_size']} rows)")
    ax.plot(sizes, [r["single_frame_fps"] for r in sweep], "s-", label="single frame")
    ax.plot(sizes, [r["decode_bound_fps"] for r in sweep], "k--", label="decode bound: seq. fps x 2/(G+1)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("GOP size G (frames)")
    ax.set_ylabel(f"random-read frames/s ({sweep[0]['read_column']})")
    ax.set_title(f"Random reads against the decode bound ({cpu_count} CPUs)")
    ax.legend(fontsize=8)
    return _save(fig, path)


def scenario_comparison(scenarios: list[dict], path: Path) -> Path:
    """robodata against the LeRobot-layout baseline for every scenario, samples/s on a log axis."""
    names = [s["scenario"] for s in scenarios]
    x = range(len(names))
    width = 0.38
    fig, ax = plt.subplots(figsize=(max(6.4, 0.9 * len(names) + 2), 4))
    ax.bar([i - width / 2 for i in x], [s["robodata_per_s"] for s in scenarios], width, label="robodata")
    ax.bar([i + width / 2 for i in x], [s["baseline_per_s"] for s in scenarios], width, label="LeRobot layout (PyAV)")
    for i, s in zip(x, scenarios, strict=True):
        ax.annotate(
            f"{s['ratio']:.1f}x",
            (i, s["robodata_per_s"]),
            textcoords="offset points",
            xytext=(0, 3),
            ha="center",
            fontsize=8,
        )
    ax.set_yscale("log")
    ax.set_xticks(list(x), names)
    ax.set_ylabel("samples/s (median)")
    ax.set_title("A: single sample, B: batches, C: 8-frame windows")
    ax.legend(fontsize=8)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
