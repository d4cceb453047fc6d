"""The anchored-GOP benchmark (``robodata bench-anchored``): one row per (footage, G, codec), the
stored bytes of each encoding, and tables that put each anchored row against its normal one."""

from __future__ import annotations

from robodata.bench.anchored import codec_figures, codec_table, dataset_table, video_frames
from robodata.codec import EncoderSettings, GopEncoder
from robodata_tests.conftest import REAL_VIDEO


def test_codec_figures_measure_each_codec_at_each_g_on_the_same_frames():
    frames, fps = video_frames(REAL_VIDEO, limit=12)
    assert len(frames) == 12 and round(fps, 2) == 29.97
    rows = codec_figures({"clip": (frames, fps)}, gop_sizes=(4, 8), rounds=2, singles=3, batches=1, batch_size=4)
    assert [(r["gop_size"], r["codec"]) for r in rows] == [
        (4, "h264"),
        (4, "h264-anchored"),
        (8, "h264"),
        (8, "h264-anchored"),
    ]
    for r in rows:
        encoder = GopEncoder(176, 144, fps, EncoderSettings(gop_size=r["gop_size"], codec=r["codec"]))
        gops = [g for f in frames for g in encoder.add(f)] + encoder.finish()
        assert r["bytes_per_frame"] == sum(len(g.data) for g in gops) / 12  # the encoding is deterministic
        assert r["frames"] == 12 and r["size"] == "176x144" and r["psnr_db"] > 30
        assert min(r["single_ms"], r["batch_frames_per_s"], r["window_ms"], r["encode_ms_per_frame"]) > 0
    lines = codec_table(rows).splitlines()
    assert len(lines) == 2 + 4
    assert [" (" in line.split("|")[4] for line in lines[2:]] == [False, True, False, True]  # bytes ratio


def test_dataset_table_puts_each_anchored_point_against_the_normal_one():
    def point(g, codec, d):
        return {
            "gop_size": g,
            "codec": codec,
            "ingest_seconds": 10.0,
            "bytes_per_frame": 1000.0,
            "psnr_top_db": 42.0,
            "batch_samples_per_s": 100.0,
            "loader_samples_per_s": d,
        }

    table = dataset_table([point(4, "h264", 200.0), point(4, "h264-anchored", 300.0)])
    assert table.splitlines()[-1] == (
        "| 4 | h264-anchored | 10.0 (1.00x) | 1,000 (1.00x) | 42.00 | 100 (1.00x) | 300 (1.50x) |"
    )
