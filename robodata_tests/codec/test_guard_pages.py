"""No conversion writes past the array it was given: every layout, native and resized, over many
sizes, into output arrays that end right where an inaccessible page begins (a write past the
end is a segmentation fault, not silent damage). The conversions run in a child process, so a
fault fails this test with the size that caused it instead of killing the test worker."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import ctypes, mmap, sys
    import av
    import numpy as np
    from robodata.codec import frame_array, frame_shape

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    PAGE, PROT_NONE = mmap.PAGESIZE, 0
    keep = []

    def guarded(shape):
        '''A uint8 array of ``shape`` whose last byte is the last before an inaccessible page.'''
        size = int(np.prod(shape))
        pages = -(-size // PAGE)
        area = mmap.mmap(-1, (pages + 1) * PAGE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(area))
        if libc.mprotect(base + pages * PAGE, PAGE, PROT_NONE) != 0:
            raise OSError(ctypes.get_errno(), "mprotect")
        keep.append(area)  # the mapping lives as long as the arrays in it
        return np.frombuffer(area, np.uint8, count=size, offset=pages * PAGE - size).reshape(shape)

    def picture(height, width):
        rgb = np.random.default_rng([height, width]).integers(0, 256, (height, width, 3), dtype=np.uint8)
        return av.VideoFrame.from_ndarray(rgb).reformat(format="yuv420p")

    checked = 0
    for line in sys.stdin:
        height, width, out_height, out_width, pixel_format = line.split()
        frame = picture(int(height), int(width))
        size = (int(out_height), int(out_width))
        size = None if size == (frame.height, frame.width) else size
        out = guarded(frame_shape(*(size or (frame.height, frame.width)), pixel_format))
        print(pixel_format, width, height, size, flush=True)  # the last line names a size that faults
        expected = frame_array(frame, size, pixel_format)
        assert frame_array(frame, size, pixel_format, out) is out
        assert (out == expected).all(), (pixel_format, width, height, size)
        checked += 1
    print("checked", checked)
    """
)

# Widths across swscale's SIMD block sizes and their tails, odd and even heights
WIDTHS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 47, 63, 64, 65, 88, 100, 127, 129, 424, 639, 640, 1279]
NATIVE = [(h, w, h, w) for w in WIDTHS for h in (1, 2, 3, 17)] + [(240, 424, 240, 424), (72, 88, 72, 88)]
RESIZED = [(72, 88, 36, 44), (240, 424, 224, 224), (48, 64, 95, 127), (18, 100, 17, 33), (480, 640, 31, 17)]


def cases(pixel_format: str) -> list[str]:
    sizes = NATIVE + RESIZED
    if pixel_format == "yuv420p":  # I420 has whole chroma rows and columns only
        sizes = [s for s in sizes if not any(v % 2 for v in s)]
    return [f"{h} {w} {oh} {ow} {pixel_format}" for h, w, oh, ow in sizes]


@pytest.mark.parametrize("pixel_format", ["rgb24", "rgbp", "yuv420p"])
def test_no_conversion_writes_past_its_output_array(pixel_format):
    lines = cases(pixel_format)
    child = subprocess.run(
        [sys.executable, "-c", CHILD], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=300
    )
    last = child.stdout.strip().splitlines()[-1:] or ["(nothing)"]
    assert child.returncode == 0, f"the conversion after {last[0]!r} failed: {child.returncode} {child.stderr[-2000:]}"
    assert last == [f"checked {len(lines)}"]
