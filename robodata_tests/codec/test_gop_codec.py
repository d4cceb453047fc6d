"""Closed, fixed-length GOPs that decode frame-exactly and stop at the frame asked for."""

from __future__ import annotations

import av
import numpy as np
import pytest

from robodata.codec import EncoderSettings, GopEncoder, decode_gop_frames, plain_decode_gop
from robodata.codec._quality import psnr
from robodata_tests.conftest import REAL_VIDEO


def _nal_types(data: bytes) -> list[int]:
    """NAL unit types of an Annex B stream, in order."""
    types, i = [], 0
    while True:
        i = data.find(b"\x00\x00\x01", i)
        if i < 0:
            return types
        types.append(data[i + 3] & 0x1F)
        i += 3


@pytest.fixture(scope="module")
def real_frames() -> list[np.ndarray]:
    with av.open(str(REAL_VIDEO)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def _encode(frames, gop_size=8):
    height, width = frames[0].shape[:2]
    encoder = GopEncoder(width, height, 30, EncoderSettings(gop_size=gop_size))
    gops = [g for f in frames for g in encoder.add(f)]
    return gops + encoder.finish()


def test_gops_are_closed_fixed_length_and_self_contained(real_frames):
    gops = _encode(real_frames, gop_size=8)
    assert [g.n_frames for g in gops] == [8] * 15  # 120 frames
    for gop in gops:
        assert sum(gop.packet_sizes) == len(gop.data)
        first = _nal_types(gop.data[: gop.packet_sizes[0]])
        rest = _nal_types(gop.data[gop.packet_sizes[0] :])
        # The first frame: SPS (7) and PPS (8), then only IDR slices (5).
        assert first.index(7) < first.index(8) < first.index(5)
        assert {t for t in first if t in (1, 5)} == {5}
        # Later frames: non-IDR slices (1) only, so the GOP is closed and IDR-led.
        assert {t for t in rest if t in (1, 5)} == {1}


def test_frames_equal_a_fresh_plain_pyav_decoder_pixel_for_pixel(real_frames):
    gops = _encode(real_frames)
    for j in (0, 7, 14):
        reference = plain_decode_gop(gops[j].data)
        assert len(reference) == 8
        # Out of order and repeated requests, through the reused per-thread decoder.
        wanted = [5, 0, 7, 5, 3]
        got = decode_gop_frames(gops[j].data, gops[j].packet_sizes, wanted)
        for k, frame in zip(wanted, got, strict=True):
            np.testing.assert_array_equal(frame, reference[k])


def test_decoding_stops_at_the_last_wanted_frame(real_frames):
    gop = _encode(real_frames)[3]
    cut = sum(gop.packet_sizes[:3])
    # Everything after frame 2 is garbage: decoding frames 0..2 must never touch it.
    damaged = gop.data[:cut] + b"\xff" * (len(gop.data) - cut)
    reference = plain_decode_gop(gop.data)
    frame = decode_gop_frames(damaged, gop.packet_sizes, [2])[0]
    np.testing.assert_array_equal(frame, reference[2])


def test_real_footage_survives_the_reencode(real_frames):
    gops = _encode(real_frames)
    decoded = [f for g in gops for f in plain_decode_gop(g.data)]
    assert len(decoded) == len(real_frames)
    assert min(psnr(a, b) for a, b in zip(real_frames, decoded, strict=True)) > 30


def test_output_buffers_are_filled_in_place(real_frames):
    gop = _encode(real_frames)[0]
    out = np.zeros((2, *real_frames[0].shape), np.uint8)
    decode_gop_frames(gop.data, gop.packet_sizes, [1, 6], out=[out[0], out[1]])
    reference = plain_decode_gop(gop.data)
    np.testing.assert_array_equal(out[0], reference[1])
    np.testing.assert_array_equal(out[1], reference[6])


def test_bad_settings_and_sizes_are_refused():
    with pytest.raises(ValueError, match="gop_size"):
        EncoderSettings(gop_size=0)
    with pytest.raises(ValueError, match="even"):
        GopEncoder(175, 144, 30)
    encoder = GopEncoder(176, 144, 30)
    with pytest.raises(ValueError, match="176x144"):
        encoder.add(np.zeros((10, 10, 3), np.uint8))
