"""Decoded frames kept until the rows that need them are handed over: each GOP decoded once.

A training worker knows every batch it will read this epoch (its share of the sampler's plan).
When a batch needs a frame whose GOP is not decoded yet, the GOP is decoded once, as far as the
last frame any of the worker's remaining rows wants from it, and the frames that later batches
want are kept as the decoder's own pictures (planar YUV 4:2:0: 1.5 bytes a pixel, half of RGB)
until their last use, when they are dropped. Colour conversion (or the copy of the YUV planes)
happens only when a frame is handed over, through the same ``frame_array`` as ``get_frames``, so
the pixels are identical to ``RoboDataset.get_frames``.

With the decode-once block order (``robodata.torch._block_order``) a worker's held frames are
bounded by its mixing window: at most ``window_rows + 2 * G`` rows' frames. With a uniform order
frames wanted much later are kept too while they fit. Either way the held bytes never exceed
``budget_bytes``: a frame that does not fit is not kept, and its GOP is decoded again when a
later batch wants it.

>>> from robodata import open as open_dataset
>>> ds = open_dataset("data/demo")
>>> buffer = FrameBuffer(ds, ["top"], budget_bytes=64 << 20)
>>> buffer.expect([np.array([0, 2]), np.array([1, 3])])  # this worker's batches, in order
>>> first = buffer.read(np.array([0, 2]))["top"]  # decodes GOP 0 once, keeps frames 1 and 3
>>> buffer.decoded_gops, buffer.held_frames
(1, 2)
>>> second = buffer.read(np.array([1, 3]))["top"]  # from the buffer
>>> buffer.decoded_gops, buffer.held_frames, bool((second == ds.get_frames([1, 3], cameras="top").data["top"]).all())
(1, 0, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from robodata.reader._dataset import gop_store
from robodata.reader._decode_pool import decode_gop_pictures, frame_array, run_jobs
from robodata.reader._output_pool import OutputPool
from robodata.reader._renditions import output_shape

DEFAULT_FRAME_BUFFER_BYTES = 1 << 30  # per DataLoader worker: ~760 rows of 3 cameras at 640 x 480


def picture_bytes(picture) -> int:
    """Bytes a decoded picture holds (its planes)."""
    return sum(plane.buffer_size for plane in picture.planes)


def yuv_frame_bytes(height: int, width: int) -> int:
    """Bytes of one planar YUV 4:2:0 frame: a full-size Y plane and quarter-size U and V."""
    return height * width + 2 * ((height + 1) // 2) * ((width + 1) // 2)


class FrameBuffer:
    """Decoded frames of ``cameras`` (at ``resolution``) by (GOP ref_id, frame in GOP), kept for
    the batches announced with ``expect`` within ``budget_bytes``.

    Counters: ``decoded_gops`` and ``decoded_frames`` (frames the decoder produced),
    ``held_bytes`` / ``peak_bytes`` (pictures kept).
    """

    def __init__(
        self,
        dataset,
        cameras: Sequence[str],
        *,
        resolution: tuple[int, int] | None = None,
        budget_bytes: int = DEFAULT_FRAME_BUFFER_BYTES,
        concurrency: int | None = None,
    ) -> None:
        self._ds = dataset
        self.cameras = list(cameras)
        self.resolution = resolution
        self.budget_bytes = int(budget_bytes)
        self.concurrency = concurrency
        self._pictures: dict[tuple[int, int], object] = {}
        self._outputs = OutputPool()  # batch arrays used again once the training loop drops them
        self._sizes: dict[tuple[int, int], int] = {}
        self.held_bytes = 0
        self.peak_bytes = 0
        self.decoded_gops = 0
        self.decoded_frames = 0
        self._refs = np.zeros(0, np.int64)  # sorted GOP ref_ids the plan wants frames of
        self._span = 1  # frames per GOP in the key: key = position of ref * span + frame
        self._keys = np.zeros(0, np.int64)  # sorted (GOP, frame) keys the plan wants
        self._uses = np.zeros(0, np.int64)  # remaining uses of each key

    @property
    def held_frames(self) -> int:
        return len(self._pictures)

    def expect(self, batches: Sequence[np.ndarray]) -> None:
        """The batches this process reads next, in order (the rest of its epoch); drops what the
        buffer holds for an earlier plan."""
        self._clear()
        rows = np.concatenate([np.asarray(b, dtype=np.int64) for b in batches]) if len(batches) else np.zeros(0)
        refs, frames = self._plan(rows.astype(np.int64))
        self._refs = np.unique(refs)
        self._span = int(frames.max()) + 1 if frames.size else 1
        keys = np.searchsorted(self._refs, refs) * self._span + frames
        self._keys, counts = np.unique(keys, return_counts=True)
        self._uses = counts.astype(np.int64)

    def _plan(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        refs, frames = [], []
        for camera in self.cameras:
            r, f, _ = gop_store(self._ds).frame_plan(rows, camera, self.resolution)
            refs.append(r)
            frames.append(f)
        if not refs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(refs), np.concatenate(frames)

    def _key_slots(self, refs: np.ndarray, frames: np.ndarray) -> np.ndarray:
        """Index of each (ref, frame) in the plan's keys, -1 where the plan does not want it."""
        if self._keys.size == 0:
            return np.full(len(refs), -1, np.int64)
        gop = np.searchsorted(self._refs, refs)
        known = (gop < len(self._refs)) & (self._refs[np.minimum(gop, len(self._refs) - 1)] == refs)
        known &= frames < self._span
        keys = gop * self._span + frames
        slot = np.searchsorted(self._keys, keys)
        known &= (slot < len(self._keys)) & (self._keys[np.minimum(slot, len(self._keys) - 1)] == keys)
        return np.where(known, slot, -1)

    def _still_wanted(self, ref: int) -> list[int]:
        """Frames of GOP ``ref`` that rows after this batch want."""
        gop = int(np.searchsorted(self._refs, ref))
        if gop >= len(self._refs) or self._refs[gop] != ref:
            return []
        lo, hi = np.searchsorted(self._keys, [gop * self._span, (gop + 1) * self._span])
        wanted = self._keys[lo:hi][self._uses[lo:hi] > 0] - gop * self._span
        return wanted.tolist()

    def read(
        self,
        indices: np.ndarray,
        *,
        pixel_format: str = "rgb24",
        gop_bytes: Mapping[int, bytes] | None = None,
        allocate: Callable[[tuple[int, ...]], np.ndarray] | None = None,
    ) -> dict[str, np.ndarray]:
        """The frames of rows ``indices`` per camera, as ``get_frames(...).data`` returns them;
        ``allocate(shape)`` makes each camera's uint8 output array (e.g. in shared memory)."""
        allocate = allocate or self._outputs
        indices = np.asarray(indices, dtype=np.int64)
        ds = self._ds
        out: dict[str, np.ndarray] = {}
        to_decode: dict[int, list[tuple[int, np.ndarray, tuple[int, int] | None]]] = {}
        # per kept picture, every slot it fills: one job each, since a picture's converter (its
        # swscale context) must not run on two threads at once (rows can share a camera frame)
        conversions: dict[tuple[int, int], tuple[object, list]] = {}
        used = []
        for camera in self.cameras:
            shape = output_shape(ds.metadata, camera, self.resolution, pixel_format)
            out[camera] = array = allocate((len(indices), *shape))
            refs, frames, sizes = gop_store(ds).frame_plan(indices, camera, self.resolution)
            used.append(self._key_slots(refs, frames))
            for slot, (ref, frame, size) in enumerate(zip(refs.tolist(), frames.tolist(), sizes, strict=True)):
                picture = self._pictures.get((ref, frame))
                if picture is not None:
                    conversions.setdefault((ref, frame), (picture, []))[1].append((size, array[slot]))
                else:
                    to_decode.setdefault(ref, []).append((frame, array[slot], size))
        slots = np.concatenate(used) if used else np.zeros(0, np.int64)
        slots = slots[slots >= 0]
        np.subtract.at(self._uses, slots, 1)  # this batch's uses are spent: what remains is later
        kept: dict[int, dict[int, object]] = {}
        refs_to_decode = list(to_decode)
        gops = gop_store(ds).decodable(refs_to_decode, gop_bytes)
        jobs = []
        for ref, (data, packet_sizes, codec) in zip(refs_to_decode, gops, strict=True):
            keep = [k for k in self._still_wanted(ref) if (ref, k) not in self._pictures]
            wanted = to_decode[ref]
            last = max([k for k, _, _ in wanted] + keep)
            self.decoded_gops += 1
            self.decoded_frames += last + 1
            jobs.append(_decode_job(data, packet_sizes, codec, last, wanted, keep, pixel_format, kept, ref))
        jobs += [_convert_job(picture, targets, pixel_format) for picture, targets in conversions.values()]
        run_jobs(jobs, self.concurrency)
        self._forget_spent(slots)
        for ref, pictures in kept.items():
            for k, picture in pictures.items():
                self._keep((ref, k), picture)
        return out

    def _keep(self, key: tuple[int, int], picture) -> None:
        size = picture_bytes(picture)
        if self.held_bytes + size > self.budget_bytes:
            return  # over budget: a later batch decodes this GOP again
        self._pictures[key] = picture
        self._sizes[key] = size
        self.held_bytes += size
        self.peak_bytes = max(self.peak_bytes, self.held_bytes)

    def _forget_spent(self, slots: np.ndarray) -> None:
        """Drop the pictures this batch used for the last time."""
        spent = np.unique(slots[self._uses[slots] <= 0])
        if not spent.size or not self._pictures:
            return
        gops, frames = np.divmod(self._keys[spent], self._span)
        for ref, frame in zip(self._refs[gops].tolist(), frames.tolist(), strict=True):
            if self._pictures.pop((ref, frame), None) is not None:
                self.held_bytes -= self._sizes.pop((ref, frame))

    def _clear(self) -> None:
        self._pictures.clear()
        self._sizes.clear()
        self.held_bytes = 0


def _decode_job(data, packet_sizes, codec, last, wanted, keep, pixel_format, kept, ref):
    def run() -> None:
        pictures = decode_gop_pictures(data, packet_sizes, last, codec)
        for frame, target, size in wanted:
            frame_array(pictures[frame], size, pixel_format, target)
        kept[ref] = {k: pictures[k] for k in keep}

    return run


def _convert_job(picture, targets, pixel_format):
    def run() -> None:
        for size, target in targets:
            frame_array(picture, size, pixel_format, target)

    return run
