"""Scenarios A-D against the real peers: which rows each system reads in each round, the jobs
that read them, and the medians, ratios and aims of the results.

Every system reads the same moments: robodata's row offsets are mapped to the peers' sample
indices (``paired``, from ``pairing.baseline_rows``), so all decode the same camera frames.

>>> plan = plan_round(np.random.default_rng(0), rows=1800, config=PeerConfig(), round_index=0)  # doctest: +SKIP
>>> summary = summarize(results_by_round)            # {scenario: {system: figures}}  # doctest: +SKIP
>>> aims = peer_aims(summary)  # doctest: +SKIP
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from benchmarks.aims import _aim
from robodata.torch.sampler import RowSampler


@dataclass(frozen=True)
class System:
    """One reader in the comparison: its key in results, runner system and decoder backend."""

    key: str
    runner: str
    backend: str | None
    label: str


SYSTEMS = (
    System("robodata", "robodata", None, "robodata"),
    System("lerobot-torchcodec", "lerobot", "torchcodec", "LeRobot 0.6.1 (torchcodec)"),
    System("lerobot-pyav", "lerobot", "pyav", "LeRobot 0.6.1 (pyav)"),
    System("lancedb", "lancedb", None, "LanceDBDataset (lerobot-lancedb 0.3.1)"),
)
PEER_GROUPS = {"lerobot": ("lerobot-torchcodec", "lerobot-pyav"), "lancedb": ("lancedb",)}
# robodata / peer samples/s the issue aims for: (against LeRobot, against LanceDB).
AIMS = {"A": (3.0, 2.0), "B": (4.0, 3.0), "C": (5.0, 3.0), "D": (3.0, 3.0)}
SCENARIOS = {
    "A": "one sample, every camera (`ds[i]`)",
    "B": "random batches of {batch_size}, every camera (batched path)",
    "C": "{window_frames}-frame windows x every camera (delta_timestamps)",
    "D": "DataLoader, {loader_workers} workers, batch {batch_size}, every camera (steady samples/s)",
}


@dataclass(frozen=True)
class PeerConfig:
    """Sizes of one peers run (per round; every system reads the same rows)."""

    rounds: int = 3
    single_samples: int = 30
    batches: int = 4
    batch_size: int = 32
    windows: int = 20
    window_frames: int = 8
    loader_batches: int = 16
    loader_workers: int = 2
    quality_rows: int = 12
    seed: int = 0

    @classmethod
    def small(cls) -> PeerConfig:
        return cls(
            rounds=1,
            single_samples=3,
            batches=1,
            batch_size=8,
            windows=2,
            loader_batches=3,
            loader_workers=0,
            quality_rows=3,
        )


def plan_round(rng: np.random.Generator, rows: int, config: PeerConfig, round_index: int) -> dict:
    """The robodata rows of one round: A samples, B batches, C window starts and D's loader
    batches (the order robodata's ``make_dataloader`` reads with this round's seed)."""
    seed = config.seed + round_index
    sampler = RowSampler(rows, batch_size=config.batch_size, seed=seed, shuffle="global")
    loader = [np.asarray(b) for b in sampler.batches()]
    while len(loader) < config.loader_batches:  # small datasets: the next epochs follow
        sampler.set_epoch(sampler.epoch + 1)
        loader += [np.asarray(b) for b in sampler.batches()]
    return {
        "A": rng.integers(0, rows, config.single_samples),
        "B": [rng.integers(0, rows, config.batch_size) for _ in range(config.batches)],
        "C": rng.integers(0, rows, config.windows),
        "D": loader[: config.loader_batches],
        "seed": seed,
    }


def _ints(values) -> list[int]:
    return [int(v) for v in values]


def scenario_jobs(system: System, plan: dict, paired: np.ndarray, config: PeerConfig, window: dict) -> list[list[dict]]:
    """The measurements of one round for ``system``: A, B, C (one process) and D (another).

    ``window`` gives C's geometry: ``row_offsets`` (robodata rows of k consecutive camera frames)
    and ``fps`` (the peers' frame rate, for delta_timestamps k / fps)."""
    own = system.key == "robodata"
    index = (lambda rows: _ints(rows)) if own else (lambda rows: _ints(paired[np.asarray(rows)]))
    reads: list[dict] = [
        {"name": "A", "kind": "sample", "indices": index(plan["A"])},
        {"name": "B", "kind": "batch", "batches": [index(b) for b in plan["B"]]},
        {"name": "C", "kind": "window", "indices": index(plan["C"]), "frames": config.window_frames, **window},
    ]
    loader = {
        "name": "D",
        "kind": "loader",
        "batches": [index(b) for b in plan["D"]],
        "batch_size": config.batch_size,
        "workers": config.loader_workers,
        "seed": plan["seed"],
    }
    return [reads, [loader]]


def job_for(system: System, root: str, measurements: list[dict], warmup: list[int]) -> dict:
    """The JSON job a runner process reads."""
    return {
        "system": system.runner,
        "root": root,
        "backend": system.backend,
        "warmup": warmup,
        "measurements": measurements,
    }


def loader_rows_match(expected: list[list[int]], delivered: list[list[int]]) -> bool:
    """Whether a loader delivered the planned batches, in order (robodata's loader plans its own
    order from the seed; the peers get the same batches as lists)."""
    return [sorted(b) for b in expected[: len(delivered)]] == [sorted(b) for b in delivered]


# --- summaries -----------------------------------------------------------------------------------
def round_figures(measurement: dict) -> dict:
    """samples/s of one measurement in one round (total samples / total seconds), the median
    call in ms and, for a loader, the seconds to its first batch."""
    seconds, samples = measurement["seconds"], measurement["samples"]
    figures = {
        "per_s": sum(samples) / sum(seconds) if seconds and sum(seconds) > 0 else float("nan"),
        "median_ms": 1000 * statistics.median(seconds) if seconds else float("nan"),
        "calls": len(seconds),
        "samples": sum(samples),
    }
    if measurement["kind"] == "loader":
        figures["first_batch_s"] = measurement["first_batch_s"]
    return figures


def summarize(rounds: list[dict[str, list[dict]]]) -> dict[str, dict[str, dict]]:
    """``{scenario: {system: figures}}`` from each round's ``{system: [measurement, ...]}``:
    the median over rounds of samples/s (and of the other figures), with every round's value."""
    per: dict[str, dict[str, list[dict]]] = {}
    for results in rounds:
        for system, measurements in results.items():
            for m in measurements:
                if m["kind"] in ("sample", "batch", "window", "loader"):
                    per.setdefault(m["name"], {}).setdefault(system, []).append(round_figures(m))
    summary: dict[str, dict[str, dict]] = {}
    for scenario, systems in per.items():
        summary[scenario] = {}
        for system, figures in systems.items():
            merged = {key: statistics.median(f[key] for f in figures) for key in figures[0]}
            merged["rounds"] = [f["per_s"] for f in figures]
            summary[scenario][system] = merged
    return summary


def best_of(figures: dict[str, dict], group: str) -> tuple[str, dict] | None:
    """The fastest system of a peer group (LeRobot: the faster of its backends in that scenario)."""
    present = [(k, figures[k]) for k in PEER_GROUPS[group] if k in figures]
    return max(present, key=lambda kv: kv[1]["per_s"]) if present else None


def ratio_rows(summary: dict[str, dict[str, dict]], config: PeerConfig | None = None) -> list[dict]:
    """One row per scenario: every system's samples/s and robodata's ratio to each peer group."""
    sizes = vars(config or PeerConfig())
    rows = []
    for scenario in sorted(summary):
        figures = summary[scenario]
        if "robodata" not in figures:
            continue
        ours = figures["robodata"]["per_s"]
        row = {
            "scenario": scenario,
            "description": SCENARIOS.get(scenario, scenario).format(**sizes),
            "per_s": {k: v["per_s"] for k, v in figures.items()},
            "ratios": {k: ours / v["per_s"] for k, v in figures.items() if k != "robodata" and v["per_s"] > 0},
        }
        if scenario == "D":
            row["first_batch_s"] = {k: v["first_batch_s"] for k, v in figures.items()}
        for group in PEER_GROUPS:
            best = best_of(figures, group)
            if best is not None and best[1]["per_s"] > 0:
                row[f"vs_{group}"] = {"ratio": ours / best[1]["per_s"], "against": best[0]}
        rows.append(row)
    return rows


def peer_aims(
    summary: dict[str, dict[str, dict]], storage: dict | None = None, config: PeerConfig | None = None
) -> list[dict]:
    """The issue's aims: A-D ratios against LeRobot (its faster backend) and LanceDB, then bytes
    per frame (no more than LeRobot's) and PSNR of the top camera (at least LeRobot's)."""
    aims = []
    for row in ratio_rows(summary, config):
        targets = AIMS.get(row["scenario"])
        if targets is None:
            continue
        for group, target in zip(PEER_GROUPS, targets, strict=True):
            versus = row.get(f"vs_{group}")
            if versus is not None:
                name = "LeRobot" if group == "lerobot" else "LanceDBDataset"
                aims.append(
                    _aim(
                        f"{row['scenario']}-{group}",
                        f"{row['scenario']} {row['description']}: robodata / {name}",
                        target,
                        versus["ratio"],
                        against=versus["against"],
                    )
                )
    if storage:
        ours, theirs = storage.get("robodata", {}), storage.get("lerobot-torchcodec", {})
        if ours.get("bytes_per_frame") and theirs.get("bytes_per_frame"):
            aims.append(
                _aim(
                    "bytes",
                    "video bytes per frame: robodata / LeRobot",
                    1.0,
                    ours["bytes_per_frame"] / theirs["bytes_per_frame"],
                    at_least=False,
                )
            )
        if ours.get("psnr_top_db") is not None and theirs.get("psnr_top_db") is not None:
            aims.append(
                _aim(
                    "psnr",
                    "PSNR of the top camera vs the source (dB): robodata at least LeRobot's",
                    theirs["psnr_top_db"],
                    ours["psnr_top_db"],
                    against="lerobot-torchcodec",
                )
            )
    return aims
