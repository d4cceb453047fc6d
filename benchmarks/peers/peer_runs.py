"""One system's measurements in a runner process of its own, as the harness starts it: which Python
(robodata's for robodata, the peers' venv for the peers), which copy of the dataset, which row warms
it up; and the frames a peer decodes for the picture-quality comparison.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from benchmarks.peers.peer_protocol import run_job
from benchmarks.peers.peer_scenarios import System, job_for


def root_kind(system: System) -> str:
    """Which copy of the dataset a system reads: robodata's own, LeRobot's or LanceDB's."""
    return {"robodata": "robodata", "robodata-compat": "robodata", "lerobot": "lerobot", "lancedb": "lance"}[
        system.runner
    ]


def warmup_rows(system: System, paired: np.ndarray, rows: int) -> list[int]:
    """The row a system reads before it is timed (the middle one, in the system's own indices)."""
    row = rows // 2
    return [row] if system.runner.startswith("robodata") else [int(paired[row])]


def run_system(
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
    """Run ``measurements`` of ``system`` in a runner process of its own and return its answer."""
    interpreter = Path(sys.executable) if system.runner.startswith("robodata") else python
    job = {**job_for(system, roots[root_kind(system)], measurements, warmup, size), **options}
    return run_job(interpreter, job, log=log, nice=nice)


def peer_frames(
    system: System, roots: dict, python: Path, indices: np.ndarray, work: Path, log: Path, nice: int
) -> dict[str, np.ndarray]:
    """The frames ``system`` decodes at ``indices``, per camera (H x W x 3 uint8), for the PSNR."""
    out = work / f"frames-{system.key}.npz"
    measurement = {"name": "frames", "kind": "frames", "indices": [int(i) for i in indices], "out": str(out)}
    run_system(system, roots, python, [measurement], [int(indices[0])], log, nice)
    with np.load(out) as data:
        return {camera: data[camera] for camera in data.files}
