"""The kinds of measurement a runner job asks of its opened system (``sample``, ``batch``,
``window``, ``loader``, ``bound``, ``frames``, ``profile``; ``peer_runner.py``'s docstring says
what each one times), each returning its figures for the result.
"""

from __future__ import annotations

import time

from benchmarks.peers.runner_systems import open_system


def _timed(call, inputs: list) -> list[float]:
    seconds = []
    for value in inputs:
        start = time.perf_counter()
        call(value)
        seconds.append(time.perf_counter() - start)
    return seconds


def measure(system, measurement: dict, warmup: list[int]) -> dict:
    """Run one measurement of a job and return its figures."""
    kind = measurement["kind"]
    result = {"name": measurement["name"], "kind": kind}
    if kind == "sample":
        for index in warmup:
            system.sample(index)
        result["seconds"] = _timed(system.sample, measurement["indices"])
        result["samples"] = [1] * len(measurement["indices"])
    elif kind == "batch":
        system.batch(warmup)
        result["seconds"] = _timed(system.batch, measurement["batches"])
        result["samples"] = [len(b) for b in measurement["batches"]]
    elif kind == "window":
        read = system.window_reader(measurement)
        for index in warmup:
            read(index)
        result["seconds"] = _timed(read, measurement["indices"])
        result["samples"] = [1] * len(measurement["indices"])
    elif kind == "loader":
        result.update(_measure_loader(system, measurement))
    elif kind == "frames":
        import numpy as np

        frames = system.frames(measurement["indices"])
        np.savez(measurement["out"], **frames)
        result["cameras"] = {camera: list(array.shape) for camera, array in frames.items()}
    elif kind == "bound":
        result.update(system.bound(measurement))
    elif kind == "profile":
        result.update(_profile(system, measurement))
    else:
        raise ValueError(f"unknown measurement kind {kind!r}")
    return result


def _measure_loader(system, measurement: dict) -> dict:
    loader, indices_of, close = system.loader(measurement)
    wanted = len(measurement["batches"])
    seconds, samples, delivered = [], [], []
    warm = int(measurement.get("warm_epochs") or 0)
    start = time.perf_counter()
    first_batch_s = None
    try:
        # Whole epochs first (its first batch is the cold one), then the next epoch timed in
        # full: every batch, the first too, so work done early for later batches is counted.
        for _epoch in range(warm):
            for _batch in loader:
                if first_batch_s is None:
                    first_batch_s = time.perf_counter() - start
        if measurement.get("epoch_boundary"):
            epoch_boundary(measurement["epoch_boundary"])
        last = time.perf_counter()
        for batch in loader:
            now = time.perf_counter()
            seconds.append(now - last)
            last = now
            rows = indices_of(batch)
            samples.append(len(rows))
            delivered.append(rows)
            if len(delivered) >= wanted:
                break
    finally:
        close()
    if not warm and seconds:  # no warm epoch: the first batch is the cold one, not a step
        first_batch_s, seconds, samples = seconds[0], seconds[1:], samples[1:]
    return {"first_batch_s": first_batch_s, "seconds": seconds, "samples": samples, "delivered": delivered}


def epoch_boundary(address) -> None:
    """Tell the harness an epoch ended (``benchmarks.s3_peers.EpochBoundary``: it notes what the
    store did so far) and wait for its answer before the next epoch starts."""
    import socket

    with socket.create_connection((address[0], int(address[1])), timeout=60) as conn:
        conn.recv(1)


def _profile(system, measurement: dict) -> dict:
    import cProfile
    import pstats

    of = measurement["of"]
    if of == "sample":
        call, inputs = system.sample, measurement["indices"]
    elif of == "batch":
        call, inputs = system.batch, measurement["batches"]
    elif of == "open":  # the training process's part of the first batch: open the dataset, read a batch

        def call(batch):
            return open_system(system.job).batch(batch)

        inputs = measurement["batches"]
    else:
        call, inputs = system.window_reader(measurement), measurement["indices"]
    call(inputs[0])  # warm: open files and decoders outside the profile
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for value in inputs:
        call(value)
    profiler.disable()
    elapsed = time.perf_counter() - start
    # (file, line, function) -> (cc, nc, own, cumulative, callers); typeshed leaves the table out
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    own: dict[str, float] = {}
    for (file, _, function), entry in stats.items():
        name = f"{file}:{function}"
        own[name] = own.get(name, 0.0) + entry[2]
    top = dict(sorted(own.items(), key=lambda kv: -kv[1])[:200])
    return {"seconds_per_call": elapsed / len(inputs), "own_seconds": top}
