"""Frame conversions into output arrays (``robodata.codec.frame_array``), per layout at
640x480 and 424x240, and an 8-frame window x every camera of a dataset; medians of per-call
milliseconds, wall and CPU (CPU counts every thread's, and holds up better on a shared machine).
For an A/B of two checkouts, run it with each one first on PYTHONPATH:

    PYTHONPATH=CHECKOUT python benchmarks/pixel_conversions.py DATASET --rounds 7
"""

from __future__ import annotations

import argparse
import statistics
import time

import av
import numpy as np


def _pictures(width: int, height: int, n: int = 8) -> list[av.VideoFrame]:
    """Decoded-like untagged YUV 4:2:0 pictures of a textured scene."""
    base = np.random.default_rng(0).integers(0, 256, (height // 8 + 1, width // 8 + 1, 3), dtype=np.uint8)
    scene = np.repeat(np.repeat(base, 8, 0), 8, 1)[:height, :width]
    return [av.VideoFrame.from_ndarray(np.roll(scene, 4 * i, 1)).reformat(format="yuv420p") for i in range(n)]


def _timed(call, arguments: list, rounds: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = [], []
        for argument in arguments:
            start, start_cpu = time.perf_counter(), time.process_time()
            call(argument)
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        walls.append(statistics.median(wall) * 1e3)
        cpus.append(statistics.median(cpu) * 1e3)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="?", help="a local robodata dataset for the window reads")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    from robodata.codec import frame_array, frame_shape

    print(f"{'conversion into an output array':40s} {'wall ms':>8s} {'CPU ms':>8s}")
    for width, height in [(640, 480), (424, 240)]:
        pictures = _pictures(width, height)
        for pixel_format in ("rgb24", "rgbp", "yuv420p"):
            out = np.empty(frame_shape(height, width, pixel_format), np.uint8)
            wall, cpu = _timed(lambda p: frame_array(p, None, pixel_format, out), pictures * 10, args.rounds)  # noqa: B023
            print(f"{f'{width}x{height} {pixel_format}':40s} {wall:8.3f} {cpu:8.3f}")
    if args.dataset:
        import robodata

        ds = robodata.open(args.dataset)
        starts = np.random.default_rng(0).integers(0, len(ds) - 8, 40).tolist()
        for pixel_format in ("rgb24", "rgbp"):
            wall, cpu = _timed(
                lambda i: ds.get_windows([i], list(range(8)), columns=[], pixel_format=pixel_format),  # noqa: B023
                starts,
                args.rounds,
            )
            print(f"{f'8-frame window x {len(ds.cameras)} cameras, {pixel_format}':40s} {wall:8.3f} {cpu:8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
