"""Why an aim was missed: cProfile of robodata's path and of the peer's on the same inputs (one
decode thread, the calling thread only), the split of time attached to the aim as ``why``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.peers.peer_runs import run_system
from benchmarks.peers.peer_scenarios import SYSTEMS, PeerConfig, split_key
from benchmarks.profiling import Profile, profile_from_own_times


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
            answer = run_system(
                system, roots, python, [measurement], [], log, nice, size=size, concurrency=1, **options
            )
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
