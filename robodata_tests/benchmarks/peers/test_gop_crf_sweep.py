"""The G x CRF (x preset) sweep behind robodata's default encoding: each point ingested with its
settings and measured, the frontier, the default chosen within LeRobot's bytes and PSNR, and
the sweep's table."""

from __future__ import annotations

import numpy as np

from benchmarks.peers.gop_crf_sweep import choose_default, mark_frontier, sweep_table


def _point(g, crf, per_s, size, db):
    return {
        "gop_size": g,
        "crf": crf,
        "loader_samples_per_s": per_s,
        "loader_first_batch_s": 1.0,
        "bytes_per_frame": size,
        "psnr_top_db": db,
        "psnr_db": db,
    }


def test_frontier_and_default_within_lerobots_bytes_and_psnr():
    points = mark_frontier(
        [
            _point(4, 23, 300.0, 6000.0, 36.0),
            _point(8, 23, 280.0, 4500.0, 36.5),
            _point(8, 28, 270.0, 4600.0, 35.0),  # beaten by G=8 crf 23 on every axis
            _point(2, 28, 320.0, 7000.0, 33.0),
        ]
    )
    assert [p["on_frontier"] for p in points] == [True, True, False, True]
    chosen = choose_default(points, max_bytes_per_frame=6200.0, min_psnr_db=35.5)
    assert (chosen["gop_size"], chosen["crf"]) == (4, 23)  # fastest within the limits; G=2 is too big
    assert choose_default(points, max_bytes_per_frame=5000.0, min_psnr_db=35.5)["gop_size"] == 8
    assert choose_default(points, max_bytes_per_frame=1000.0) is None
    table = sweep_table(points, chosen).splitlines()
    assert table[2] == "| 4 | 23 | n/a | yes | n/a | n/a | 300.0 | 1.00 | 6,000 | 36.00 | 36.00 | n/a | **chosen** |"
    assert table[4].endswith("| 35.00 | 35.00 | n/a |  |")
    # The decode bound, where measured, is the throughput the choice is made on (wall-clock D is noisy).
    for point, bound in zip(points, (100.0, 90.0, 80.0, 400.0), strict=True):
        point["bound_samples_per_s"] = bound
    mark_frontier(points)
    assert choose_default(points, max_bytes_per_frame=6200.0, min_psnr_db=35.5)["gop_size"] == 4
    assert choose_default(points, max_bytes_per_frame=7000.0)["gop_size"] == 2  # fastest bound within 7,000 bytes


def test_the_default_is_the_cheapest_random_read_within_a_tenth_of_the_best_decode_bound():
    def point(gop, preset, bound, random_read, size, db):
        return {
            **_point(gop, 20, 0.0, size, db),
            "preset": preset,
            "bound_samples_per_s": bound,
            "random_row_cpu_ms": random_read,
            "ingest_seconds": 15.0,
        }

    points = mark_frontier(
        [
            point(8, "veryfast", 1000.0, 5.0, 3741.0, 44.2),
            point(4, "veryfast", 940.0, 4.0, 4291.0, 44.3),  # over LeRobot's bytes
            point(4, "faster", 920.0, 4.1, 4180.0, 44.5),
            point(2, "faster", 850.0, 3.2, 4200.0, 44.6),  # more than 10% below the best bound
        ]
    )
    assert all(p["on_frontier"] for p in points)
    chosen = choose_default(points, max_bytes_per_frame=4279.0, min_psnr_db=43.99)
    assert (chosen["gop_size"], chosen["preset"]) == (4, "faster")
    table = sweep_table(points, chosen).splitlines()
    assert table[4] == "| 4 | 20 | faster | yes | 4.10 | 920.0 | 0.0 | 1.00 | 4,180 | 44.50 | 44.50 | 15 | **chosen** |"
    # A point no better on any axis than another leaves the frontier.
    points.append(point(4, "medium", 900.0, 4.2, 4190.0, 44.4))
    assert mark_frontier(points)[-1]["on_frontier"] is False


def test_sweep_ingests_each_point_with_its_settings_and_measures_psnr_on_the_given_rows(sample_uploads, tmp_path):
    from benchmarks.peers.gop_crf_sweep import sweep_gop_crf
    from robodata.ingest import stored_settings

    uploads = {0: sample_uploads[0]}
    points = sweep_gop_crf(
        uploads,
        tmp_path / "sweep",
        gop_sizes=(4,),
        crfs=(23,),
        presets=("veryfast",),
        fast_decodes=(True, False),
        random_rows=5,
        batch_size=8,
        workers=0,
        loader_batches=3,
        quality_rows=np.array([0, 50, 150]),
    )
    assert [(p["gop_size"], p["crf"], p["fast_decode"]) for p in points] == [(4, 23, True), (4, 23, False)]
    for point in points:
        settings = stored_settings(point["dataset_uri"])
        assert (settings.gop_size, settings.crf, settings.preset, settings.fast_decode) == (
            4,
            23,
            "veryfast",
            point["fast_decode"],
        )
        assert point["loader_samples_per_s"] > 0 and point["bound_samples_per_s"] > 0 and 20 < point["psnr_top_db"] < 99
        assert point["random_row_cpu_ms"] > 0
    # Deblocking and CABAC (fastdecode off) spend fewer bytes on the same pictures.
    assert points[1]["bytes_per_frame"] < points[0]["bytes_per_frame"]
