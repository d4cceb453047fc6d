"""``robodata bench sensor``: the upload sensor's tick time and cursor size at thousands of
uploads in an s3:// prefix (moto's server on 127.0.0.1).

Uploads are tiny (an ``episode.json`` and a ``states.parquet`` of a few bytes): only the listing
and the sensor's bookkeeping are measured, not ingest. Phases per upload count:

- first tick: nothing ingested yet; lists everything, requests the per-tick cap;
- catch-up tick: the dataset holds every upload (simulated: the stored fingerprints are the
  listed ones) and the requested runs succeeded; it reads the stored fingerprints once;
- idle tick: nothing changed; lists the tail of the prefix (after the last upload dealt with);
- new-upload tick: one more upload arrives, its name sorting last; the tail finds it;
- full-listing tick: an upload whose name sorts before the others arrives; tail ticks do not
  see it, the next full listing (every ``full_listing_every_s``; forced here) requests it.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from unittest import mock

import dagster as dg

from benchmarks.moto_server import LocalS3, local_s3


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--uploads", type=int, nargs="+", default=[2000, 10000], help="upload counts, ascending")
    p.add_argument("--max-requests-per-tick", type=int, default=100, help="the sensor's cap on run requests per tick")


def main(args: argparse.Namespace) -> int:
    counts = sorted(args.uploads)
    print(f"upload sensor on moto S3 (127.0.0.1), cap {args.max_requests_per_tick} runs per tick")
    print(
        f"{'uploads':>8} {'objects':>8} {'first tick s':>13} {'requests':>9} {'catch-up s':>11} "
        f"{'idle tick s':>12} {'(sensor CPU)':>12} {'(LISTs)':>8} {'new-upload s':>13} "
        f"{'full listing s':>15} {'(sensor CPU)':>12} {'(LISTs)':>8} {'cursor max B':>13}"
    )
    with local_s3() as s3, _environ(s3.environ):
        root = s3.uri("sensor-bench")
        written = 0
        for count in counts:
            _write_uploads(s3, f"{root}/uploads", written, count)
            written = count
            row = _measure(s3, root, count, args.max_requests_per_tick)
            print(
                f"{count:>8} {2 * count:>8} {row['first']:>13.2f} {row['requests']:>9} {row['catch_up']:>11.2f} "
                f"{row['idle']:>12.2f} {row['idle_cpu']:>12.2f} {row['idle_lists']:>8} {row['new']:>13.2f} "
                f"{row['full']:>15.2f} {row['full_cpu']:>12.2f} {row['full_lists']:>8} {row['cursor']:>13}"
            )
            for extra in (f"episode_new_{count}", f"episode_{count // 2:06d}-late"):
                _delete(s3, f"{root}/uploads/{extra}")
    print(
        "Wall times include moto's ListObjectsV2, which sorts the whole bucket for every 1,000-key page\n"
        "(even for a tail listing); the sensor's own work per tick is the CPU column."
    )
    return 0


def _measure(s3: LocalS3, root: str, count: int, cap: int) -> dict:
    from robodata.format import StoredUpload
    from robodata.orchestration import UploadCursor
    from robodata.orchestration.defs.ingest import sensor as sensors
    from robodata.orchestration.defs.resources import DatasetStore
    from robodata.storage import list_complete_uploads

    store = DatasetStore(root=f"{root}/dataset-{count}", uploads_root=f"{root}/uploads")
    settings = sensors.UploadSensorSettings(max_requests_per_tick=cap)
    instance = dg.DagsterInstance.ephemeral()
    cpu_s = [0.0]  # the sensor process's own CPU time in the last tick (the rest is waiting on S3)

    def tick(cursor):
        context = dg.build_sensor_context(
            instance=instance, cursor=cursor, resources={"store": store, "upload_sensor_settings": settings}
        )
        start, cpu = time.perf_counter(), time.process_time()
        result = sensors.upload_sensor(context)
        for request in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        cpu_s[0] = time.process_time() - cpu
        return result, time.perf_counter() - start

    first, first_s = tick(None)
    listed = list_complete_uploads(store.uploads_root, s3.storage_options)
    stored = {u.episode_id: StoredUpload(u.episode_id, i, u.fingerprint, u.uri) for i, u in enumerate(listed)}
    with mock.patch.object(sensors, "stored_uploads", lambda *a, **k: stored):
        done = UploadCursor.loads(first.cursor)
        done.pending.clear()  # every requested run succeeded
        catch_up, catch_up_s = tick(done.dumps())
        idle_lists = _list_requests(s3, lambda: tick(catch_up.cursor))
        idle, idle_s = tick(catch_up.cursor)
        idle_cpu = cpu_s[0]
        _write_uploads(s3, f"{root}/uploads", 0, 1, prefix=f"episode_new_{count}")
        new, new_s = tick(idle.cursor)
        late = f"episode_{count // 2:06d}-late"  # sorts before the tail's start
        _write_uploads(s3, f"{root}/uploads", 0, 1, prefix=late)
        missed, _ = tick(new.cursor)
        due = UploadCursor.loads(missed.cursor)
        due.full_at -= settings.full_listing_every_s  # the full listing is due
        full_lists = _list_requests(s3, lambda: tick(due.dumps()))
        full, full_s = tick(due.dumps())
        full_cpu = cpu_s[0]
    assert [r.partition_key for r in new.run_requests] == [f"episode_new_{count}"], "the new upload was missed"
    assert missed.run_requests == [], "a tail listing saw an upload sorting before its start"
    assert [r.partition_key for r in full.run_requests] == [late], "the full listing missed the late upload"
    cursor = max(len(r.cursor) for r in (first, catch_up, idle, new, missed, full))
    return {
        "first": first_s,
        "requests": len(first.run_requests),
        "catch_up": catch_up_s,
        "idle": idle_s,
        "idle_cpu": idle_cpu,
        "idle_lists": idle_lists,
        "new": new_s,
        "full": full_s,
        "full_cpu": full_cpu,
        "full_lists": full_lists,
        "cursor": cursor,
    }


def _list_requests(s3: LocalS3, action) -> int:
    """ListObjectsV2 requests ``action`` makes (counted by wrapping s3fs's paginator)."""
    import aiobotocore.client

    calls = []
    original = aiobotocore.client.AioBaseClient._make_api_call

    async def counting(self, operation_name, api_params):
        if operation_name.startswith("List"):
            calls.append(operation_name)
        return await original(self, operation_name, api_params)

    with mock.patch.object(aiobotocore.client.AioBaseClient, "_make_api_call", counting):
        action()
    return len(calls)


def _write_uploads(s3: LocalS3, uploads: str, start: int, stop: int, prefix: str = "episode") -> None:
    from robodata.storage import fsspec_filesystem

    fs = fsspec_filesystem(uploads, s3.storage_options)
    names = [
        f"{uploads}/{prefix}_{i:06d}/{name}" if prefix == "episode" else f"{uploads}/{prefix}/{name}"
        for i in range(start, stop)
        for name in ("states.parquet", "episode.json")
    ]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda name: fs.pipe_file(name, b"{}"), names))


def _delete(s3: LocalS3, uri: str) -> None:
    from robodata.storage import fsspec_filesystem

    fsspec_filesystem(uri, s3.storage_options).rm(uri, recursive=True)


@contextmanager
def _environ(values: dict[str, str]):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
