"""Loader figures that need more than a throughput loop: per-worker memory at 1M and 10M rows
(synthetic rows pointing at real GOPs) and the time to the first batch by worker start method,
each in a fresh process.

>>> worker_memory(synthetic_dataset("data/demo", 10_000_000, "bench_out/rows-10m"))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np

from benchmarks.loader import _rss

_CHUNK_ROWS = 1 << 20


def synthetic_dataset(base_uri: str, rows: int, out: str) -> str:
    """A dataset of ``rows`` rows made by repeating ``base_uri``'s rows as new episodes: only the
    columns the loader reads (episode, frame, time, GOP references), pointing at the base's GOPs
    (gops.lance is linked, not copied). Reused when it already has ``rows`` rows."""
    import lance
    import pyarrow as pa

    from robodata.format import FRAMES_TABLE, GOPS_TABLE, METADATA_KEY, ref_columns
    from robodata.reader import open_dataset

    frames_path = os.path.join(out, FRAMES_TABLE)
    if os.path.isdir(frames_path) and lance.dataset(frames_path).count_rows() == rows:
        return out
    base = open_dataset(base_uri)
    columns = ["episode_index", "frame_index", "timestamp_ns"] + [c for cam in base.cameras for c in ref_columns(cam)]
    table = base.to_table(columns=columns)
    schema = pa.schema(
        [base.lance_dataset.schema.field(c) for c in columns],
        metadata={METADATA_KEY: base.lance_dataset.schema.metadata[METADATA_KEY]},
    )
    arrays = {c: table[c].to_numpy() for c in columns}
    per_copy, episodes = len(table), int(arrays["episode_index"].max()) + 1

    def batches():
        copies = max(_CHUNK_ROWS // per_copy, 1)
        for first_copy in range(0, -(-rows // per_copy), copies):
            n = min(copies, -(-rows // per_copy) - first_copy)
            keep = min(n * per_copy, rows - first_copy * per_copy)
            data = {c: np.tile(a, n)[:keep] for c, a in arrays.items()}
            shift = np.repeat(np.arange(first_copy, first_copy + n, dtype=np.int64) * episodes, per_copy)[:keep]
            data["episode_index"] = data["episode_index"] + shift
            yield pa.RecordBatch.from_arrays([pa.array(data[c], schema.field(c).type) for c in columns], schema=schema)

    os.makedirs(out, exist_ok=True)
    lance.write_dataset(
        pa.RecordBatchReader.from_batches(schema, batches()),
        frames_path,
        schema=schema,
        mode="overwrite",
        max_rows_per_file=4 << 20,
    )
    gops_link = os.path.join(out, GOPS_TABLE)
    if not os.path.exists(gops_link):
        os.symlink(os.path.abspath(os.path.join(base_uri, GOPS_TABLE)), gops_link)
    return out


def _memory_of(pid: int) -> dict[str, float]:
    """Resident, proportional and private MiB of one process (from /proc/<pid>/smaps_rollup)."""
    fields = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                    fields[parts[0][:-1]] = int(parts[1]) / 1024
    except FileNotFoundError:
        return {"rss_mib": _rss(pid) / (1 << 20)}
    private = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return {"rss_mib": fields.get("Rss", 0), "pss_mib": fields.get("Pss", 0), "private_mib": private}


def worker_memory(uri: str, *, batches: int = 40, batch_size: int = 32, num_workers: int = 2) -> dict:
    """Memory of the training process and each DataLoader worker after ``batches`` random batches
    (one camera, global shuffle): RSS counts the shared, memory-mapped row index and epoch order
    in every process that touched them; ``private_mib`` is what each worker holds alone."""
    from robodata.torch import make_dataloader

    started = time.perf_counter()
    loader = make_dataloader(
        uri, batch_size=batch_size, num_workers=num_workers, cameras=["wrist_left"], columns=["episode_index"], seed=3
    )
    built = time.perf_counter() - started
    iterator = iter(loader)
    for _ in range(batches):
        next(iterator)
    from torch.utils.data.dataloader import _MultiProcessingDataLoaderIter

    workers_iterator = loader._iterator  # persistent workers: the DataLoader keeps its iterator
    assert isinstance(workers_iterator, _MultiProcessingDataLoaderIter)  # num_workers > 0
    workers = [w.pid for w in workers_iterator._workers if w.pid is not None]  # DataLoader's worker processes (started)
    figures = {
        "rows": loader.reader.num_rows,
        "batches": batches,
        "loader_built_s": round(built, 2),
        "main": _memory_of(os.getpid()),
        "workers": [_memory_of(pid) for pid in workers],
    }
    loader.close()
    return figures


def _probe_first_batch(uri: str, start_method: str) -> None:
    """Run in a fresh process: seconds to the first batch of two DataLoaders made one after the
    other (2 workers, batch 32, every camera); prints JSON."""
    from robodata.torch import make_dataloader

    times = []
    for _ in range(2):
        started = time.perf_counter()
        loader = make_dataloader(uri, batch_size=32, num_workers=2, seed=1, start_method=start_method)
        next(iter(loader))
        times.append(round(time.perf_counter() - started, 2))
        loader.close()
    print(json.dumps({"start_method": start_method, "first_loader_s": times[0], "second_loader_s": times[1]}))


def first_batch_times(uri: str) -> list[dict]:
    """Time to the first batch with worker processes, per start method, each in a fresh process
    (so nothing is imported or started beforehand)."""
    out = []
    for method in ("spawn", "forkserver"):
        code = f"from benchmarks.loader_scale import _probe_first_batch; _probe_first_batch({uri!r}, {method!r})"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"first-batch probe ({method}) failed: {done.stderr[-2000:]}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        figures["process_s"] = round(time.perf_counter() - started, 2)
        out.append(figures)
    return out
