"""The S3-like store of ``robodata bench s3-epoch``: the proxy in front of the moto fixture counts
exactly the requests the server logs, returns every GOP byte a read needs, holds each response
back by its latency and paces it to its bandwidth cap."""

from __future__ import annotations

import os
import time

import pyarrow.compute as pc
import pytest

import robodata
from benchmarks.s3_epoch import Comparison, EpochFigures, compare, format_comparison, needed_gop_bytes
from benchmarks.s3_store import LatencyProxy, ProxiedRequest, StoreFigures, request_kind, server_cpu_seconds
from benchmarks.tiny_episodes import episode_level, frame_level, identify, tiny_episode
from robodata.format import frames_uri, gops_uri, open_table, ref_columns
from robodata.ingest import write_episode
from robodata.storage import fsspec_filesystem

pytestmark = pytest.mark.s3

EPISODES = 2  # 10 frames each in GOPs of 4: three GOPs an episode


@pytest.fixture(scope="module")
def stored(s3, tmp_path_factory):
    """A tiny dataset on disk and its copy on the moto server: (local root, s3:// root)."""
    local = str(tmp_path_factory.mktemp("tiny") / "ds")
    for index in range(EPISODES):
        write_episode(tiny_episode(index), local)
    return local, s3.put_tree(local, s3.fresh_uri("s3-store"))


@pytest.fixture
def proxy(s3):
    with LatencyProxy(("127.0.0.1", s3.port), latency_s=0.0) as proxy:
        yield proxy


def server_logged(s3, since: int) -> list[tuple[str, str]]:
    """(method, kind) of each request the server itself logged since ``since``, sorted (requests on
    parallel connections reach the server's log and the proxy's record in either order)."""
    return sorted((r.method, request_kind(r.method, f"{r.path}?{r.query}")) for r in s3.requests(since))


def proxied(proxy: LatencyProxy, since: int) -> list[tuple[str, str]]:
    return sorted((r.method, r.kind) for r in proxy.requests[since:])


def test_reading_frames_of_distinct_gops_fetches_each_gop_through_the_counted_proxy(s3, stored, proxy):
    local, uri = stored
    frames = open_table(frames_uri(local)).to_table()
    _, gop_column, _ = ref_columns("cam")
    first_row_of_gop = {}
    for row, key in enumerate(zip(frames["episode_index"].to_pylist(), frames[gop_column].to_pylist(), strict=True)):
        first_row_of_gop.setdefault(key, row)
    assert len(first_row_of_gop) == 3 * EPISODES
    server_mark, proxy_mark = s3.mark(), proxy.mark()

    ds = robodata.open(uri, storage_options=dict(s3.storage_options, aws_endpoint=proxy.endpoint))
    rows = sorted(first_row_of_gop.values())
    images = ds.get_frames(rows)["observation_images_cam"]

    planted = [
        (episode_level(frames["episode_index"][row].as_py()), frame_level(frames["frame_index"][row].as_py()))
        for row in rows
    ]
    assert [identify(image) for image in images] == planted  # the right frames came back
    assert proxied(proxy, proxy_mark) == server_logged(s3, server_mark)  # every request, in the proxy's count
    store = StoreFigures(tuple(proxy.requests[proxy_mark:]), 0.0)
    assert store.gets_by_kind()["gops.lance data"] >= 1
    assert store.bytes_by_kind()["gops.lance data"] >= needed_gop_bytes(local)  # every GOP's bytes, once at least
    assert store.body_bytes > 0 and store.mean_bytes_per_get == store.body_bytes / store.gets


def test_one_epoch_is_measured_with_the_servers_own_count(s3, stored, proxy):
    local, uri = stored
    server_mark, proxy_mark = s3.mark(), proxy.mark()

    result = compare(local, uri, s3.storage_options, proxy, s3.process.pid, epochs=1, workers=0, batch_size=4)

    [s3_epoch], [local_epoch] = result.of("s3"), result.of("local")
    rows = 10 * EPISODES
    assert s3_epoch.samples == local_epoch.samples == rows
    store = s3_epoch.store
    logged = server_logged(s3, server_mark)
    assert proxied(proxy, proxy_mark) == logged  # the loader's every request went through the proxy
    # Opening the dataset (make_dataloader) came before the epoch: the epoch's requests are the last.
    opening = proxy.requests[proxy_mark : len(proxy.requests) - len(store.requests)]
    assert len(opening) + len(store.requests) == len(logged) and store.gets > 0
    assert store.bytes_by_kind()["gops.lance data"] >= result.needed_gop_bytes
    gops = open_table(gops_uri(local)).to_table(columns=["packet_sizes"])
    assert result.gops == 3 * EPISODES
    assert result.needed_gop_bytes == pc.sum(pc.list_flatten(gops["packet_sizes"])).as_py() > 0
    text = format_comparison(result)
    assert text.splitlines()[5].split()[:3] == ["0", f"{s3_epoch.wall_s:.2f}", str(store.gets)]
    assert f"gops.lance data {store.gets_by_kind()['gops.lance data']}" in text


def test_the_proxy_holds_a_response_back_by_its_latency_and_paces_it_to_its_bandwidth(s3):
    key = s3.fresh_uri("paced")
    body = os.urandom(256 << 10)
    fsspec_filesystem(key, s3.storage_options).pipe_file(key, body)
    bucket, _, name = key.removeprefix("s3://").partition("/")

    def timed_get(proxy: LatencyProxy) -> float:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=proxy.endpoint,
            aws_access_key_id=s3.access_key,
            aws_secret_access_key=s3.secret_key,
            region_name="us-east-1",
        )
        start = time.perf_counter()
        assert client.get_object(Bucket=bucket, Key=name)["Body"].read() == body
        return time.perf_counter() - start

    with LatencyProxy(("127.0.0.1", s3.port), latency_s=0.3) as delayed:
        assert timed_get(delayed) >= 0.3  # a lower bound by construction
        assert [(r.method, r.status, r.body_bytes) for r in delayed.requests] == [("GET", 200, len(body))]
    with LatencyProxy(("127.0.0.1", s3.port), latency_s=0.0, bandwidth=1 << 20) as capped:
        assert timed_get(capped) >= len(body) / (1 << 20)  # 0.25 s at 1 MiB/s


def test_a_server_busier_than_80_percent_of_a_core_is_flagged_as_the_likely_bottleneck():
    def comparison(server_cpu_s: float) -> Comparison:
        store = StoreFigures((ProxiedRequest("GET", "gops.lance data", 206, 1000),), server_cpu_s)
        return Comparison(
            1000, 1, [EpochFigures("s3", 64, 10.0, 1.0, 32, store), EpochFigures("local", 64, 5.0, 1.0, 32)]
        )

    busy, idle = format_comparison(comparison(8.5)), format_comparison(comparison(7.5))
    assert "WARNING: the S3 server used more than 80% of a core" in busy and "WARNING" not in idle
    assert "server CPU at most 75% of a core per epoch: not the bottleneck" in idle
    assert "ratio 0.44x" in busy  # (64 - 32) rows / (10 - 1) s against (64 - 32) / (5 - 1) s


def test_server_cpu_seconds_reads_a_process_cpu_time():
    before = server_cpu_seconds(os.getpid())
    spin_until = time.process_time() + 0.2
    while time.process_time() < spin_until:
        pass
    assert server_cpu_seconds(os.getpid()) - before >= 0.1


def test_request_kinds():
    assert request_kind("GET", "/b/ds/gops.lance/data/x.lance") == "gops.lance data"
    assert request_kind("GET", "/b/ds/frames.lance/_versions/3.manifest") == "frames.lance manifests"
    assert request_kind("GET", "/b?list-type=2&prefix=ds/gops.lance/_versions/") == "listing"
    assert request_kind("HEAD", "/b/ds/frames.lance/_indices/u/index.idx") == "frames.lance indices"
