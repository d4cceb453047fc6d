"""Every pixel format robodata hands frames over in is PyAV's plain conversion, pixel for pixel,
at every frame size: rgb24 is ``to_ndarray(format="rgb24")``, rgbp that transposed, yuv420p the
decoder's own planes; scaled, PyAV's resize with the project's interpolation."""

from __future__ import annotations

import threading

import av
import numpy as np
import pytest

from robodata.codec import EncoderSettings, GopEncoder, _planar_rgb
from robodata.codec._gop_decoder import decode_gop_pictures
from robodata.codec._resize import INTERPOLATION, frame_array, frame_shape

# Widths crossing every SIMD block size (8 to 64 pixels) and its tail, odd ones, and 1 to 4096;
# heights small for wide frames, a few tall and flat frames.
WIDTHS = [*range(1, 67), 88, 100, 127, 128, 129, 255, 256, 257, 424, 639, 640, 641, 1000, 1279, 1920, 4095, 4096]
SIZES = sorted(
    {(h, w) for w in WIDTHS for h in ([1, 2, 3, 6, 17] if w <= 256 else [2, 3, 8])}
    | {(1080, 2), (2048, 3), (720, 16), (480, 88), (240, 424), (480, 640), (1, 4096), (2, 4095)}
)
# (source height, width) -> (output height, width): down, up, to odd sizes, and to a flat frame
RESIZES = [((72, 88), (36, 44)), ((240, 424), (96, 128)), ((240, 424), (224, 224)), ((48, 64), (95, 127))]
RESIZES += [((18, 100), (240, 424)), ((480, 640), (31, 17)), ((6, 4096), (2, 2047)), ((2, 2), (1, 1))]


def picture(height: int, width: int, seed: int = 0) -> av.VideoFrame:
    """A YUV 4:2:0 picture, untagged as robodata's decoder hands them over, of random pixels."""
    rgb = np.random.default_rng([height, width, seed]).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return av.VideoFrame.from_ndarray(rgb).reformat(format="yuv420p")


def reference(frame: av.VideoFrame, pixel_format: str, size: tuple[int, int] | None = None) -> np.ndarray:
    if size is not None:
        height, width = size
        if pixel_format == "yuv420p":
            scaled = frame.reformat(width=width, height=height, format="yuv420p", interpolation=INTERPOLATION)
            return scaled.to_ndarray(format="yuv420p")
        rgb = frame.to_ndarray(format="rgb24", width=width, height=height, interpolation=INTERPOLATION)
    else:
        if pixel_format == "yuv420p":
            return frame.to_ndarray(format="yuv420p")
        rgb = frame.to_ndarray(format="rgb24")
    return rgb.transpose(2, 0, 1) if pixel_format == "rgbp" else rgb


def assert_exact(frame: av.VideoFrame, pixel_format: str, size: tuple[int, int] | None = None) -> None:
    expected = reference(frame, pixel_format, size)
    made = frame_array(frame, size, pixel_format)
    into = np.full(frame_shape(*(size or (frame.height, frame.width)), pixel_format), 7, np.uint8)
    returned = frame_array(frame, size, pixel_format, into)
    where = f"{pixel_format} {frame.width}x{frame.height}" + (f" -> {size[1]}x{size[0]}" if size else "")
    for got in (made, into):
        assert got.shape == expected.shape, where
        wrong = np.argwhere(got != expected)
        assert len(wrong) == 0, f"{where}: {len(wrong)} values wrong, first at {wrong[0].tolist()}"
    assert returned is into


# rgbp goes through swscale's planar output where that was checked exact ("fast"), else through
# rgb24 ("fallback"): both are tested at every size.
LAYOUTS = [("rgb24", "pyav"), ("rgbp", "fast"), ("rgbp", "fallback"), ("yuv420p", "planes")]


@pytest.mark.parametrize(("pixel_format", "path"), LAYOUTS, ids=[f"{f}-{p}" for f, p in LAYOUTS])
def test_every_size_is_exact(pixel_format, path, monkeypatch):
    if path == "fallback":
        monkeypatch.setattr(_planar_rgb, "_fast_path_is_exact", lambda *key: False)
    for height, width in SIZES:
        if pixel_format == "yuv420p" and (height % 2 or width % 2):
            continue  # I420 has no odd sizes (test_i420_refuses_odd_sizes)
        assert_exact(picture(height, width), pixel_format)


@pytest.mark.parametrize("pixel_format", ["rgb24", "rgbp", "yuv420p"])
@pytest.mark.parametrize(("source", "size"), RESIZES, ids=[f"{s[1]}x{s[0]}-{d[1]}x{d[0]}" for s, d in RESIZES])
def test_resized_is_pyavs_resize(pixel_format, source, size):
    if pixel_format == "yuv420p" and (size[0] % 2 or size[1] % 2):
        with pytest.raises(ValueError, match="even height and width"):
            frame_array(picture(*source), size, pixel_format)
        return
    assert_exact(picture(*source), pixel_format, size)


def test_rgbp_at_the_issue_widths_is_rgb24_transposed():
    """The widths issue 41 found wrong (columns 80-87, 96-99, 416-423) in decoded H.264."""
    for width, height in [(88, 72), (100, 64), (424, 240)]:
        rgb = np.random.default_rng(width).integers(0, 256, (height, width, 3), dtype=np.uint8)
        encoder = GopEncoder(width, height, 30, EncoderSettings(gop_size=2))
        gops = [g for _ in range(2) for g in encoder.add(rgb)] + encoder.finish()
        for frame in decode_gop_pictures(gops[0].data, gops[0].packet_sizes, gops[0].n_frames - 1):
            assert_exact(frame, "rgbp")


def test_a_planar_path_that_goes_wrong_is_caught_and_not_used(monkeypatch):
    """The fast rgbp path is checked per frame size before it is trusted: were swscale's planar
    output wrong anywhere at some size, that size converts through rgb24 instead."""
    original = _planar_rgb._through_gbrp

    def off_by_one_in_a_corner(frame, out):
        original(frame, out)
        out[2, -1, -1] ^= 1
        return out

    monkeypatch.setattr(_planar_rgb, "_through_gbrp", off_by_one_in_a_corner)
    _planar_rgb._fast_path_is_exact.cache_clear()
    try:
        frame = picture(48, 64)
        assert_exact(frame, "rgbp")
        assert not _planar_rgb._fast_path_is_exact("yuv420p", 64, 48, frame.colorspace, frame.color_range)
    finally:
        monkeypatch.undo()
        _planar_rgb._fast_path_is_exact.cache_clear()
    assert _planar_rgb._fast_path_is_exact("yuv420p", 64, 48, frame.colorspace, frame.color_range)


@pytest.mark.parametrize(("attribute", "value"), [("colorspace", 1), ("color_range", 2)], ids=["bt709", "full-range"])
def test_tagged_frames_keep_their_tags(attribute, value):
    frame = picture(18, 88)
    untagged = frame.to_ndarray(format="rgb24")
    setattr(frame, attribute, value)
    for pixel_format in ("rgb24", "rgbp"):
        assert_exact(frame, pixel_format)
    assert not np.array_equal(frame.to_ndarray(format="rgb24"), untagged)  # the tag changes the pixels


def test_i420_refuses_odd_sizes():
    with pytest.raises(ValueError, match="even height and width, got 87x72"):
        frame_shape(72, 87, "yuv420p")


def test_an_out_of_another_shape_is_refused():
    with pytest.raises(ValueError, match="uint8 \\(3, 72, 88\\)"):
        frame_array(picture(72, 88), None, "rgbp", np.zeros((72, 88, 3), np.uint8))


def test_threads_convert_at_once():
    frames = [picture(72, 88, seed) for seed in range(4)]
    formats = ["rgb24", "rgbp", "yuv420p"]
    expected = {(i, f): reference(p, f) for i, p in enumerate(frames) for f in formats}
    failures: list[str] = []

    def convert(pixel_format):
        for _ in range(10):
            for i, frame in enumerate(frames):
                if not np.array_equal(frame_array(frame, None, pixel_format), expected[(i, pixel_format)]):
                    failures.append(f"frame {i} as {pixel_format}")

    threads = [threading.Thread(target=convert, args=(f,)) for f in formats * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


@pytest.mark.parametrize("pixel_format", ["rgb24", "rgbp", "yuv420p"])
def test_a_strided_out_is_written_too(pixel_format):
    frame = picture(72, 88)
    shape = frame_shape(72, 88, pixel_format)
    every_other = np.zeros((shape[0] * 2, *shape[1:]), np.uint8)[::2]
    assert frame_array(frame, None, pixel_format, every_other) is every_other
    np.testing.assert_array_equal(every_other, reference(frame, pixel_format))
