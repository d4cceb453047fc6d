"""Frames converted straight into the caller's array (robodata.codec._swscale) are PyAV's
conversion pixel for pixel, in every layout and size the readers ask for; frames the path was
not checked for go through PyAV."""

from __future__ import annotations

import threading

import av
import numpy as np
import pytest

from robodata.codec import EncoderSettings, GopEncoder, _resize, _swscale
from robodata.codec._gop_decoder import decode_gop_pictures
from robodata_tests.conftest import REAL_VIDEO

# (pixel format, output size): unscaled (the direct path) and scaled down and up (through PyAV)
CASES = [
    ("rgb24", None),
    ("rgb24", (96, 128)),
    ("rgb24", (224, 224)),
    ("rgb24", (600, 800)),
    ("rgbp", None),
    ("rgbp", (96, 128)),  # scaled as packed RGB, then laid out channels first
    ("yuv420p", None),
    ("yuv420p", (96, 128)),
]


@pytest.fixture(scope="module")
def pictures() -> list[av.VideoFrame]:
    """The decoder's own pictures of a real clip (widened to 256 pixels, a width the direct path
    takes), as robodata's reader gets them."""
    with av.open(str(REAL_VIDEO)) as container:
        frames = [
            f.reformat(width=256, height=144).to_ndarray(format="rgb24")
            for f, _ in zip(container.decode(video=0), range(16), strict=False)
        ]
    height, width = frames[0].shape[:2]
    encoder = GopEncoder(width, height, 30, EncoderSettings(gop_size=8))
    gops = [g for f in frames for g in encoder.add(f)] + encoder.finish()
    return [p for g in gops for p in decode_gop_pictures(g.data, g.packet_sizes, g.n_frames - 1)]


@pytest.fixture
def through_pyav(monkeypatch):
    """frame_array with the direct path switched off: PyAV's own conversion."""

    def convert(frame, size, pixel_format):
        monkeypatch.setattr(_swscale, "_library", lambda: None)
        try:
            return _resize.frame_array(frame, size, pixel_format)
        finally:
            monkeypatch.undo()

    return convert


def test_the_library_pyav_loaded_is_found():
    assert _swscale.available(), "PyAV's wheel ships libswscale and libavutil: the direct path must load here"


@pytest.mark.parametrize(("pixel_format", "size"), CASES)
def test_direct_conversion_is_pyavs_pixel_for_pixel(pictures, through_pyav, pixel_format, size):
    calls = []
    original = _swscale.convert_into

    def counting(frame, out, fmt="rgb24"):
        calls.append(result := original(frame, out, fmt))
        return result

    for picture in pictures:
        expected = through_pyav(picture, size, pixel_format)
        _resize.convert_into, saved = counting, _resize.convert_into
        try:
            direct = _resize.frame_array(picture, size, pixel_format)
            into = np.full_like(expected, 7)
            _resize.frame_array(picture, size, pixel_format, into)
        finally:
            _resize.convert_into = saved
        np.testing.assert_array_equal(direct, expected)
        np.testing.assert_array_equal(into, expected)
    assert all(calls) if size is None else not any(calls)  # only the frame's own size goes direct


def test_channels_and_planes_land_where_they_belong(pictures):
    picture = pictures[3]
    rgb = np.empty((picture.height, picture.width, 3), np.uint8)
    planar = np.empty((3, picture.height, picture.width), np.uint8)
    yuv = np.empty((picture.height * 3 // 2, picture.width), np.uint8)
    assert _swscale.convert_into(picture, rgb, "rgb24") and _swscale.convert_into(picture, planar, "rgbp")
    assert _swscale.convert_into(picture, yuv, "yuv420p")
    np.testing.assert_array_equal(planar, rgb.transpose(2, 0, 1))
    assert not np.array_equal(planar[0], planar[1])  # a clip in colour: swapped planes would show
    luma = np.frombuffer(memoryview(picture.planes[0]), np.uint8).reshape(picture.height, -1)[:, : picture.width]
    np.testing.assert_array_equal(yuv[: picture.height], luma)


@pytest.mark.parametrize(
    ("attribute", "value"), [("colorspace", 1), ("color_range", 2)], ids=["bt709-tagged", "full-range"]
)
def test_a_tagged_frame_goes_through_pyav(pictures, through_pyav, attribute, value):
    picture = decode_gop_pictures(*_one_gop(pictures), 0)[0]
    untagged = through_pyav(picture, None, "rgb24")
    setattr(picture, attribute, value)
    out = np.zeros((picture.height, picture.width, 3), np.uint8)
    assert not _swscale.convert_into(picture, out)
    assert not out.any()  # untouched
    tagged = _resize.frame_array(picture, None, "rgb24")
    np.testing.assert_array_equal(tagged, through_pyav(picture, None, "rgb24"))
    assert not np.array_equal(tagged, untagged)  # the tag changes the pixels: the guard matters


def _one_gop(pictures):
    frame = pictures[0].to_ndarray(format="rgb24")
    encoder = GopEncoder(frame.shape[1], frame.shape[0], 30, EncoderSettings(gop_size=1))
    [gop] = encoder.add(frame) + encoder.finish()
    return gop.data, gop.packet_sizes


@pytest.mark.parametrize(
    "out",
    [
        np.zeros((10, 10, 3), np.uint8),  # a scale
        np.zeros((240, 320, 4), np.uint8),  # a layout it cannot write
        np.zeros((3, 240, 320), np.float32),
        np.zeros((320, 240, 3), np.uint8)[::2],  # not contiguous
        np.zeros((9, 7), np.uint8),  # odd I420
    ],
    ids=["scaled", "four-channels", "float", "strided", "odd-i420"],
)
def test_arrays_it_cannot_write_are_refused_untouched(pictures, out):
    fmt = "yuv420p" if out.ndim == 2 else "rgbp" if out.dtype == np.float32 else "rgb24"
    assert not _swscale.convert_into(pictures[0], out, fmt)
    assert not out.any()


def test_frame_array_never_scales_into_a_mismatched_out(pictures):
    with pytest.raises(ValueError):
        _resize.frame_array(pictures[0], (96, 128), "rgb24", np.zeros((48, 64, 3), np.uint8))


def test_threads_convert_at_once(pictures, through_pyav):
    # Unscaled only: PyAV's scaling path keeps one reformatter per frame, not for sharing.
    formats = ["rgb24", "rgbp", "yuv420p"]
    expected = {(i, f): through_pyav(p, None, f) for i, p in enumerate(pictures[:6]) for f in formats}
    failures: list[str] = []

    def convert(pixel_format):
        for _ in range(20):
            for i, picture in enumerate(pictures[:6]):
                if not np.array_equal(_resize.frame_array(picture, None, pixel_format), expected[(i, pixel_format)]):
                    failures.append(f"frame {i} as {pixel_format}")

    threads = [threading.Thread(target=convert, args=(f,)) for f in formats * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_the_environment_switch_turns_it_off(monkeypatch, pictures):
    monkeypatch.setenv("ROBODATA_PYAV_CONVERT", "1")
    _swscale._library.cache_clear()
    try:
        assert not _swscale.available()
        assert not _swscale.convert_into(pictures[0], np.zeros((pictures[0].height, pictures[0].width, 3), np.uint8))
    finally:
        monkeypatch.undo()
        _swscale._library.cache_clear()
    assert _swscale.available()


@pytest.mark.parametrize("pixel_format", ["rgb24", "rgbp", "yuv420p"])
def test_nothing_is_written_past_the_callers_array(pixel_format):
    """swscale writes whole SIMD blocks: at widths it takes, not a byte lands past ``out``; at
    widths whose last block would overrun (88: 8 pixels into a 16-pixel block), PyAV converts."""
    taken = []
    for width in [*range(8, 400, 8), 640, 1280]:
        frame = av.VideoFrame.from_ndarray(
            np.random.default_rng(width).integers(0, 255, (18, width, 3), dtype=np.uint8)
        ).reformat(format="yuv420p")
        shape = _resize.frame_shape(18, width, pixel_format)
        size = int(np.prod(shape))
        memory = np.full(size + 512, 0xAB, np.uint8)
        if _swscale.convert_into(frame, memory[:size].reshape(shape), pixel_format):
            taken.append(width)
        assert (memory[size:] == 0xAB).all(), f"{pixel_format} at width {width} wrote past the array"
    assert taken == [w for w in [*range(8, 400, 8), 640, 1280] if w % 64 == 0]
