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
from typing import Any

import numpy as np

from benchmarks.aims import _aim
from robodata.torch import BlockSampler, RowSampler, dataset_randomness


@dataclass(frozen=True)
class System:
    """One reader in the comparison: its key in results, runner system, decoder backend, label,
    the scenarios it runs and (robodata-compat) the dtype of its frames."""

    key: str
    runner: str
    backend: str | None
    label: str
    scenarios: tuple[str, ...] = ("A", "B", "C", "D")
    dtype: str | None = None


SYSTEMS = (
    System("robodata", "robodata", None, "robodata make_dataloader"),
    System("robodata-compat", "robodata-compat", None, "robodata LeRobotCompatDataset uint8", ("D",), "uint8"),
    System("robodata-compat-float", "robodata-compat", None, "robodata LeRobotCompatDataset float", ("D",), "float32"),
    System("lerobot-torchcodec", "lerobot", "torchcodec", "LeRobot 0.6.1 (torchcodec)"),
    System("lerobot-pyav", "lerobot", "pyav", "LeRobot 0.6.1 (pyav)"),
    System("lancedb", "lancedb", None, "LanceDBDataset (lerobot-lancedb 0.3.1)"),
    System("bound", "robodata", None, "decode bound (in-process, every core)", ("bound",)),
)
OURS = ("robodata", "robodata-compat", "robodata-compat-float")
PEER_GROUPS = {"lerobot": ("lerobot-torchcodec", "lerobot-pyav"), "lancedb": ("lancedb",)}
POLICY_SIZE = (224, 224)  # the policy's input (pi0-style, many ACT / diffusion configs)
SCENARIOS = {
    "A": "one sample, every camera (`ds[i]`)",
    "B": "random batches of {batch_size}, every camera (batched path)",
    "C": "{window_frames}-frame windows x every camera (delta_timestamps)",
    "D": "DataLoader, {loader_workers} workers, batch {batch_size}, every camera (steady samples/s)",
}


def scenario_key(name: str, size: tuple[int, int] | None) -> str:
    """``D`` at native resolution, ``D@224`` at 224 x 224 (``D@224x160`` when not square)."""
    if size is None:
        return name
    return f"{name}@{size[0]}" if size[0] == size[1] else f"{name}@{size[0]}x{size[1]}"


def split_key(key: str) -> tuple[str, str | None]:
    """``D@224`` -> (``D``, ``224``)."""
    name, _, size = key.partition("@")
    return name, size or None


@dataclass(frozen=True)
class PeerConfig:
    """Sizes of one peers run (per round; every system reads the same rows)."""

    rounds: int = 3
    single_samples: int = 30
    batches: int = 4
    batch_size: int = 32
    windows: int = 20
    window_frames: int = 8
    loader_batches: int = 58  # one epoch of the ALOHA footage (1,800 rows) in the block order
    loader_workers: int = 2
    quality_rows: int = 48  # rows whose frames PSNR is measured on (every camera), the same for every system
    seed: int = 0
    sizes: tuple = (None, POLICY_SIZE)  # native resolution, then the policy's input size
    pyav: bool = False  # also LeRobot's pyav backend (always slower than torchcodec here)
    order: str = "block"  # D's training order: make_dataloader's decode-once default, or "global" (uniform)
    window_rows: int | None = None  # the block order's mixing window (None: make_dataloader's default)
    # Block order: both robodata paths read this many whole epochs first and D times the next one in
    # full (its first batch too): the first batch of an epoch decodes GOPs for later batches, so
    # timing only the batches after it would leave that work out. The plan is that epoch's rows.
    warm_epochs: int = 1

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

    def systems(self) -> tuple[System, ...]:
        return tuple(s for s in SYSTEMS if self.pyav or s.key != "lerobot-pyav")


def plan_round(
    rng: np.random.Generator, rows: int, config: PeerConfig, round_index: int, blocks: np.ndarray | None = None
) -> dict:
    """The robodata rows of one round: A samples, B batches, C window starts and D's loader
    batches (the order robodata's ``make_dataloader`` reads with this round's seed: the block
    order over ``blocks``, each row's GOP, when ``config.order`` is "block")."""
    seed = config.seed + round_index
    sampler = d_sampler(rows, config, seed, blocks)
    if config.order == "block":
        sampler.set_epoch(config.warm_epochs)
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


def d_sampler(rows: int, config: PeerConfig, seed: int, blocks: np.ndarray | None = None):
    """The sampler of D's batches: ``make_dataloader``'s, with ``config``'s order and workers."""
    if config.order == "block":
        if blocks is None or len(blocks) != rows:
            raise ValueError("the block order needs each row's GOP (blocks)")
        if config.window_rows is None:  # the sampler's own default window
            return BlockSampler(blocks, batch_size=config.batch_size, num_workers=config.loader_workers, seed=seed)
        return BlockSampler(
            blocks,
            batch_size=config.batch_size,
            num_workers=config.loader_workers,
            seed=seed,
            window_rows=config.window_rows,
        )
    return RowSampler(rows, batch_size=config.batch_size, seed=seed, shuffle=config.order)


def compat_batches(sampler, config: PeerConfig) -> list[np.ndarray]:
    """The batches of items ``DataLoader(ds, sampler=sampler, batch_size=...)`` makes in D's timed
    epoch (the one after ``config.warm_epochs``) from ``LeRobotCompatDataset.item_sampler``'s
    ``sampler``; small datasets: the next epochs follow."""
    batches: list[np.ndarray] = []
    epoch = config.warm_epochs
    while len(batches) < config.loader_batches:
        order = sampler.order(epoch)
        batches += [order[i : i + config.batch_size] for i in range(0, len(order), config.batch_size)]
        epoch += 1
    return batches[: config.loader_batches]


def order_randomness(ds, plan: dict, config: PeerConfig, compat_rows: dict | None = None) -> dict:
    """How random D's batches are (``robodata.torch._batch_randomness``): this round's D batches
    in ``config.order`` and, beside them, as many batches of the uniform order with the same seed."""
    uniform = RowSampler(len(ds), batch_size=config.batch_size, seed=plan["seed"], shuffle="global").batches()
    figures = {
        "order": config.order,
        "window_rows": config.window_rows,
        "workers": config.loader_workers,
        "planned": dataset_randomness(ds, plan["D"]),
        "uniform": dataset_randomness(ds, uniform[: len(plan["D"])]),
    }
    if compat_rows:
        # the LeRobot user's path at native size: its item_sampler's batches, as robodata rows
        figures["compat"] = dataset_randomness(ds, compat_rows["batches"])
        figures["compat_window_rows"] = compat_rows["window_rows"]
    return figures


def _ints(values) -> list[int]:
    return [int(v) for v in values]


def scenario_jobs(
    system: System,
    plan: dict,
    paired: np.ndarray,
    config: PeerConfig,
    window: dict,
    size: tuple[int, int] | None = None,
) -> list[list[dict]]:
    """The measurements of one round for ``system`` at ``size`` (None: native): A, B, C (one
    process) and D (another); the bound system's D batches decoded in-process, in D's phase (the
    second list), so that it sees the load D sees.

    ``window`` gives C's geometry: ``row_offsets`` (robodata rows of k consecutive camera frames)
    and ``fps`` (the peers' frame rate, for delta_timestamps k / fps)."""
    own = system.runner in ("robodata", "robodata-compat")
    index = (lambda rows: _ints(rows)) if own else (lambda rows: _ints(paired[np.asarray(rows)]))
    name = lambda letter: scenario_key(letter, size)  # noqa: E731 - one-line naming rule
    if system.key == "bound":
        return [[], [{"name": name("D"), "kind": "bound", "batches": [index(b) for b in plan["D"]]}]]
    reads: list[dict] = []
    if "A" in system.scenarios:
        reads.append({"name": name("A"), "kind": "sample", "indices": index(plan["A"])})
    if "B" in system.scenarios:
        reads.append({"name": name("B"), "kind": "batch", "batches": [index(b) for b in plan["B"]]})
    if "C" in system.scenarios:
        reads.append(
            {"name": name("C"), "kind": "window", "indices": index(plan["C"]), "frames": config.window_frames, **window}
        )
    batches = plan["D"]
    if system.runner == "robodata-compat" and config.order == "block":
        # its own sampler (ds.item_sampler, as robodata-train passes it): the batches it plans
        batches = plan["D_compat"][name("D")]
    loader = {
        "name": name("D"),
        "kind": "loader",
        "batches": [index(b) for b in batches],
        "batch_size": config.batch_size,
        "workers": config.loader_workers,
        "seed": plan["seed"],
        "order": config.order,
        "window_rows": config.window_rows,
        # both robodata paths read whole epochs first in the block order (runner_measurements' loader)
        "warm_epochs": config.warm_epochs if config.order == "block" and own else 0,
    }
    return [reads, [loader] if "D" in system.scenarios else []]


def job_for(
    system: System, root: str, measurements: list[dict], warmup: list[int], size: tuple[int, int] | None = None
) -> dict:
    """The JSON job a runner process reads."""
    return {
        "system": system.runner,
        "root": root,
        "backend": system.backend,
        "dtype": system.dtype,
        "size": list(size) if size else None,
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
    if measurement["kind"] == "bound" and measurement.get("cpu_seconds"):
        # The bound is CPU work spread over every core: samples / (CPU seconds / cores). On a
        # shared machine wall time would measure the neighbours' load instead, and a neighbour on
        # the same core inflates CPU seconds too: the bound is the best of its parts (an upper limit).
        cores = measurement["threads"]
        best = max(range(len(samples)), key=lambda i: samples[i] / max(measurement["cpu_seconds"][i], 1e-12))
        seconds = [measurement["cpu_seconds"][best] / cores * sum(samples) / max(samples[best], 1e-12)]
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
                if m["kind"] in ("sample", "batch", "window", "loader", "bound"):
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


def _order(key: str) -> tuple:
    name, size = split_key(key)
    return (size is not None, size or "", name)


def ratio_rows(summary: dict[str, dict[str, dict]], config: PeerConfig | None = None) -> list[dict]:
    """One row per scenario (native first, then at the policy's size): every system's samples/s,
    each robodata path's ratio to each peer group (``versus[ours][group]``) and, for D, the decode
    bound and each system's share of it and the seconds to the first batch."""
    sizes = vars(config or PeerConfig())
    rows = []
    for scenario in sorted(summary, key=_order):
        figures = summary[scenario]
        name, size = split_key(scenario)
        description = SCENARIOS.get(name, name).format(**sizes) + (
            f", at {size}x{size}" if size and "x" not in size else ""
        )
        bound = figures.get("bound", {}).get("per_s")
        row: dict[str, Any] = {
            "scenario": scenario,
            "description": description,
            "per_s": {k: v["per_s"] for k, v in figures.items()},
            "rounds": {k: v["rounds"] for k, v in figures.items()},
            "versus": {},
        }
        for ours in OURS:
            if ours not in figures:
                continue
            mine = figures[ours]["per_s"]
            row["versus"][ours] = {}
            for group in PEER_GROUPS:
                best = best_of(figures, group)
                if best is not None and best[1]["per_s"] > 0:
                    row["versus"][ours][group] = {"ratio": mine / best[1]["per_s"], "against": best[0]}
        if "robodata" in row["versus"]:
            for group, versus in row["versus"]["robodata"].items():
                row[f"vs_{group}"] = versus
            row["ratios"] = {
                k: figures["robodata"]["per_s"] / v["per_s"]
                for k, v in figures.items()
                if k not in (*OURS, "bound") and v["per_s"] > 0
            }
        if bound:
            row["bound"] = bound
            row["of_bound"] = {k: v["per_s"] / bound for k, v in figures.items() if k != "bound"}
        if name == "D":
            row["first_batch_s"] = {k: v["first_batch_s"] for k, v in figures.items() if "first_batch_s" in v}
        rows.append(row)
    return rows


# (scenario, robodata path, peer group, target): the aims of #31 ("Done when").
AIMS = (
    ("A", "robodata", "lancedb", 1.5),
    ("C", "robodata", "lancedb", 2.5),
    ("D", "robodata", "lerobot", 3.0),
    ("D", "robodata", "lancedb", 2.0),
    ("D", "robodata-compat", "lerobot", 3.0),
    ("D", "robodata-compat", "lancedb", 2.0),
    ("D@224", "robodata", "lancedb", 4.0),
    ("D@224", "robodata-compat", "lancedb", 4.0),
)
COMPAT_WITHIN = 0.9  # the LeRobot user's path: within 10% of make_dataloader
PATH_NAMES = {
    "robodata": "robodata make_dataloader",
    "robodata-compat": "robodata LeRobotCompatDataset (uint8)",
    "robodata-compat-float": "robodata LeRobotCompatDataset (float)",
}


def aim_target(scenario: str, ours: str, group: str) -> float | None:
    """The aimed ratio of ``ours`` against ``group`` in ``scenario``, or None (no aim)."""
    return next((t for s, o, g, t in AIMS if (s, o, g) == (scenario, ours, group)), None)


def peer_aims(
    summary: dict[str, dict[str, dict]], storage: dict | None = None, config: PeerConfig | None = None
) -> list[dict]:
    """The issue's aims: A and C against LanceDB; D at native size on both robodata paths against
    LeRobot (its faster backend) and LanceDB, the LeRobot user's path within 10% of
    make_dataloader; D at the policy's size against LanceDB; time to the first batch no more than
    LeRobot's; bytes per frame no more than LeRobot's and PSNR of the top camera at least its."""
    rows = {row["scenario"]: row for row in ratio_rows(summary, config)}
    aims = []
    for scenario, ours, group, target in AIMS:
        versus = rows.get(scenario, {}).get("versus", {}).get(ours, {}).get(group)
        if versus is None:
            continue
        name = "LeRobot" if group == "lerobot" else "LanceDBDataset"
        aims.append(
            _aim(
                f"{scenario}-{ours}-{group}",
                f"{scenario} {rows[scenario]['description']}: "
                f"{PATH_NAMES[ours] if scenario.startswith('D') else 'robodata'} / {name}",
                target,
                versus["ratio"],
                against=versus["against"],
                scenario=scenario,
                ours=ours,
            )
        )
    d = summary.get("D", {})
    if "robodata" in d and "robodata-compat" in d and d["robodata"]["per_s"] > 0:
        aims.append(
            _aim(
                "D-compat-robodata",
                "D: LeRobotCompatDataset (uint8) / make_dataloader (within 10%)",
                COMPAT_WITHIN,
                d["robodata-compat"]["per_s"] / d["robodata"]["per_s"],
                against="robodata",
                scenario="D",
                ours="robodata-compat",
            )
        )
    lerobot = d.get("lerobot-torchcodec", {}).get("first_batch_s")
    for ours in ("robodata", "robodata-compat"):
        mine = d.get(ours, {}).get("first_batch_s")
        if lerobot and mine is not None:
            aims.append(
                _aim(
                    f"first-batch-{ours}",
                    f"D time to the first batch (s): {PATH_NAMES[ours]} at most LeRobot's",
                    lerobot,
                    mine,
                    at_least=False,
                    against="lerobot-torchcodec",
                    scenario="first-batch",
                    ours=ours,
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
