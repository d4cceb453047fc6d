"""Anchored GOPs (codec ``h264-anchored``): every P frame is predicted from the GOP's IDR only,
so frame k decodes from packets [0, k] and nothing else, frame-exactly, through the reused
decoder and through a dataset's read path."""

from __future__ import annotations

import av
import lance
import numpy as np
import pytest

import robodata
from robodata.bench.quality import psnr
from robodata.codec import EncoderSettings, GopEncoder, codec_named, decode_gop_frames, plain_decode_gop
from robodata.format.schema import ref_columns
from robodata.format.tables import gops_uri
from robodata_tests.codec.test_gop_codec import _nal_types, real_frames  # noqa: F401 (fixture)

ANCHORED = "h264-anchored"


def _encode(frames, gop_size=8, codec=ANCHORED):
    height, width = frames[0].shape[:2]
    encoder = GopEncoder(width, height, 30, EncoderSettings(gop_size=gop_size, codec=codec))
    return [g for f in frames for g in encoder.add(f)] + encoder.finish()


@pytest.fixture(scope="module")
def anchored_gops(real_frames):  # noqa: F811
    return _encode(real_frames[:44])  # 5 GOPs of 8 and a short one of 4


def test_each_p_frame_is_the_p_frame_of_an_independent_idr_pair(real_frames, anchored_gops):  # noqa: F811
    assert [g.n_frames for g in anchored_gops] == [8, 8, 8, 8, 8, 4]
    # A fresh encoder given [frame 0, frame 5] of the third GOP writes the stored IDR byte for
    # byte (x264 with one thread is deterministic) and the stored P_5.
    gop, first = anchored_gops[2], 16
    height, width = real_frames[0].shape[:2]
    ctx = codec_named(ANCHORED).open_encoder(width, height, 30, EncoderSettings(gop_size=8, codec=ANCHORED))
    packets = []
    for pts, rgb in enumerate((real_frames[first], real_frames[first + 5])):
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
        frame.pts = pts
        packets += ctx.encode(frame)
    packets = [bytes(p) for p in packets + ctx.encode(None)]
    starts = np.cumsum([0, *gop.packet_sizes])
    assert packets[0] == gop.data[: starts[1]]
    assert packets[1] == gop.data[starts[5] : starts[6]]
    assert sum(gop.packet_sizes) == len(gop.data)
    # One IDR with its parameter sets, then non-IDR slices only.
    first_types, rest_types = _nal_types(gop.data[: starts[1]]), _nal_types(gop.data[starts[1] :])
    assert first_types.index(7) < first_types.index(8) < first_types.index(5)
    assert {t for t in rest_types if t in (1, 5)} == {1}


def test_every_frame_equals_a_fresh_decoder_fed_the_idr_and_that_frame(real_frames, anchored_gops):  # noqa: F811
    decoded = []
    for gop in anchored_gops:
        reference = plain_decode_gop(gop.data, codec=ANCHORED)
        assert len(reference) == gop.n_frames
        every = decode_gop_frames(gop.data, gop.packet_sizes, list(range(gop.n_frames)), codec=ANCHORED)
        for k in range(gop.n_frames):
            np.testing.assert_array_equal(every[k], reference[k])
        decoded += every
    # The reference is the footage, not noise: every frame is close to its source.
    assert min(psnr(a, b) for a, b in zip(real_frames[:44], decoded, strict=True)) > 30


def test_single_frames_and_repeats_in_any_order_are_exact(anchored_gops):
    gop = anchored_gops[1]
    reference = plain_decode_gop(gop.data, codec=ANCHORED)
    for wanted in ([0], [7], [3], [6, 2], [5, 0, 7, 5, 3], [1, 1]):
        got = decode_gop_frames(gop.data, gop.packet_sizes, wanted, codec=ANCHORED)
        for k, frame in zip(wanted, got, strict=True):
            np.testing.assert_array_equal(frame, reference[k])
    out = np.zeros((2, *reference[0].shape), np.uint8)
    decode_gop_frames(gop.data, gop.packet_sizes, [6, 4], out=[out[0], out[1]], codec=ANCHORED)
    np.testing.assert_array_equal(out[0], reference[6])
    np.testing.assert_array_equal(out[1], reference[4])


def test_frame_k_reads_only_the_idr_and_its_own_packet(anchored_gops):
    gop = anchored_gops[3]
    reference = plain_decode_gop(gop.data, codec=ANCHORED)
    starts = np.cumsum([0, *gop.packet_sizes])
    for k in (1, 4, 7):
        # Every packet but 0 and k is garbage: decoding frame k must never touch them.
        damaged = bytearray(b"\xff" * len(gop.data))
        for j in (0, k):
            damaged[starts[j] : starts[j + 1]] = gop.data[starts[j] : starts[j + 1]]
        frame = decode_gop_frames(bytes(damaged), gop.packet_sizes, [k], codec=ANCHORED)[0]
        np.testing.assert_array_equal(frame, reference[k])


def test_a_dataset_of_anchored_gops_reads_exact_frames_rows_and_windows(sample_uploads, tmp_path):
    root = str(tmp_path / "ds")
    settings = EncoderSettings(gop_size=8, codec=ANCHORED)
    robodata.ingest_episode(str(sample_uploads[0]), root, settings=settings)
    robodata.ingest_episode(str(sample_uploads[1]), root)  # appended with the dataset's stored encoding
    ds = robodata.open(root)
    assert ds.metadata.codec["name"] == ANCHORED and ds.metadata.codec["anchored"] is True
    gops = lance.dataset(gops_uri(root))
    table = gops.to_table(columns=["ref_id", "codec"], with_row_id=True)
    assert set(table["codec"].to_pylist()) == {ANCHORED}
    row_ids = dict(zip(table["ref_id"].to_pylist(), table["_rowid"].to_pylist(), strict=True))
    ref_id, _, in_gop = ref_columns("top")

    def reference(row: int) -> np.ndarray:
        pointer = ds.lance_dataset.take([row], columns=[ref_id, in_gop]).to_pylist()[0]
        [(_, data)] = gops.read_blobs("gop", ids=[row_ids[pointer[ref_id]]])
        return plain_decode_gop(data, codec=ANCHORED)[pointer[in_gop]]

    rows = [0, 37, 38, 90, len(ds) // 2, len(ds) - 1]
    got = ds.take_blobs_decoded(rows, "observation_images_top")["observation_images_top"]
    for slot, row in enumerate(rows):
        np.testing.assert_array_equal(got[slot], reference(row))
    np.testing.assert_array_equal(ds[37]["observation_images_top"], reference(37))
    windows = ds.take_windows([60, 250], range(-30, 1, 3), "observation_images_top")["observation_images_top"]
    for w, row in enumerate((60, 250)):
        for t, offset in enumerate(range(-30, 1, 3)):
            np.testing.assert_array_equal(windows[w, t], reference(row + offset))
