"""Measure one reader (robodata, LeRobot's ``LeRobotDataset`` or lerobot-lancedb's
``LanceDBDataset``) in a process of its own, so the peers' packages never mix with robodata's.

``robodata bench OUT --peers VENV`` starts this file with the peers' Python (or with robodata's
own for the robodata side), writes a job as JSON on its standard input and reads one line
``PEER_RESULT {json}`` from its standard output (anything else printed there is ignored). This
file and its ``runner_*`` siblings import only the standard library (and each other) at the top, so
they run in either environment; run by path, the file puts its checkout on ``sys.path`` for them:

    echo '{"system": "lerobot", "root": "bench_out/work/lerobot", "backend": "torchcodec",
           "measurements": [{"name": "A", "kind": "sample", "indices": [5, 17]}]}' \
        | .peers-venv/bin/python benchmarks/peers/peer_runner.py

Kinds of measurement (each times every call; ``indices`` are the system's own sample indices):

- ``sample``: ``ds[i]`` one at a time (every camera).
- ``batch``: ``batches`` through the system's batched path (robodata ``get_frames`` plus
  the rows' state and action; LanceDB ``__getitems__``; LeRobot has none: one ``ds[i]`` per row).
- ``window``: ``frames`` consecutive camera frames x every camera at each of ``indices``
  (LeRobot and LanceDB ``delta_timestamps`` of k / ``fps``; robodata ``get_windows`` at
  ``row_offsets``).
- ``loader``: a ``torch.utils.data.DataLoader`` with ``workers`` workers over ``batches``
  (robodata: its own ``make_dataloader`` with ``seed``, whose batches the caller computed the
  same way; robodata-compat: ``LeRobotCompatDataset`` in ``DataLoader(ds,
  sampler=ds.item_sampler(batch_size=, num_workers=, seed=), batch_size=, num_workers=,
  multiprocessing_context=worker_context())`` as ``robodata-train`` builds it for a LeRobot user,
  or with ``order`` "global" LeRobot's uniform ``shuffle=True``; every LeRobot-facing loader with
  lerobot-train's defaults, ``LEROBOT_TRAIN_LOADER``); seconds to the first batch,
  then seconds per batch. With ``warm_epochs`` whole epochs are read first and the next one is
  timed in full, its first batch too.
- ``bound`` (robodata only): the in-process decode bound of ``batches``: their GOPs read into
  memory first, then each decoded once as far as its last wanted frame (and every wanted frame
  converted to RGB, resized at ``size``) on every core, one single-threaded decoder per thread,
  no Lance, no workers, no copies between processes; wall and CPU seconds of ``chunks`` parts
  (the bound is samples / (CPU s / cores)).
- ``frames``: decode ``indices`` and save every camera's frames (H x W x 3 uint8) to ``out`` (.npz).
- ``profile``: cProfile ``of`` (sample, batch or window) once over its inputs; own time per function.

A job or measurement with ``size`` [H, W] (the policy's input, 224 x 224) reads frames at that size:
the peers through their documented ``image_transforms`` (torchvision ``v2.Resize``), robodata
through ``resolution=`` where its readers have it (a stored training rendition when the dataset
has one), else by resizing the decoded frames with the same kernel (``ResizeFrame``).

This file holds the protocol (a job in, its result out); the rest of the runner is beside it:
``runner_systems.py`` opens the system a job names (robodata's in ``runner_robodata.py``, the peers'
in ``runner_peers.py``, what they share in ``runner_common.py``, the resize in ``runner_resize.py``)
and ``runner_measurements.py`` runs each kind of measurement.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

if not __package__:
    # Run by path: the peers' venv has no ``benchmarks`` package, so the checkout this file is in
    # goes last on the path; the sibling modules import as ``benchmarks.peers.*`` and nothing the
    # venv installs is shadowed.
    _CHECKOUT = str(Path(__file__).resolve().parents[2])
    if _CHECKOUT not in sys.path:
        sys.path.append(_CHECKOUT)

from benchmarks.peers.runner_measurements import measure
from benchmarks.peers.runner_systems import open_system

PROTOCOL = 1
RESULT_PREFIX = "PEER_RESULT "


def run_job(job: dict) -> dict:
    """Open the job's system once and run its measurements in order."""
    if job.get("protocol", PROTOCOL) != PROTOCOL:
        raise ValueError(f"job speaks protocol {job.get('protocol')}, this runner {PROTOCOL}")
    systems = {}  # one opened system per size: a measurement's own ``size`` overrides the job's

    def system_for(measurement: dict):
        size = measurement.get("size", job.get("size"))
        key = tuple(size) if size else None
        if key not in systems:
            systems[key] = open_system({**job, "size": size})
        return systems[key]

    start = time.perf_counter()
    system = system_for({})
    open_s = time.perf_counter() - start  # opening the dataset: part of a first batch from cold
    measurements = [measure(system_for(m), m, job.get("warmup", [0])) for m in job.get("measurements", [])]
    return {
        "protocol": PROTOCOL,
        "system": job["system"],
        "label": system.label,
        "versions": system.versions,
        "python": sys.version.split()[0],
        "pid": os.getpid(),
        "open_s": open_s,
        "measurements": measurements,
    }


def main() -> int:
    try:
        job = json.loads(sys.stdin.read())
        result = run_job(job)
        code = 0
    except Exception as exc:  # reported through the protocol, with the traceback for the log
        traceback.print_exc()
        result = {"protocol": PROTOCOL, "error": f"{type(exc).__name__}: {exc}"}
        code = 1
    sys.stdout.write("\n" + RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    exit_code = main()
    sys.stderr.flush()
    # Decoder and DataLoader threads of the peers can abort at interpreter teardown ("terminate
    # called without an active exception"); the result is out, so leave without it.
    os._exit(exit_code)
