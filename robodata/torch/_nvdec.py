"""GPU decode (NVDEC) of robodata GOPs, frames landing on the training device: the seam.

Optional: needs an NVIDIA GPU, torch with CUDA and torchcodec built with CUDA (the ``gpu``
extra: ``pip install robodata[gpu]``); without them ``NvdecGopDecoder()`` raises a RuntimeError
that says what is missing, and nothing else in robodata changes. docs/benchmark.md ("GPU decode")
says how it plugs in and what it would buy.

Why it fits: a robodata GOP is a closed, self-contained Annex B H.264 stream (IDR first, SPS/PPS
repeated), so NVDEC decodes it with nothing else; the reader already knows, per row, which GOP
and which frame in it (``GopStore.frame_refs``) and fetches the GOP bytes in one verified Lance
read (``GopStore.read``). The training process does both and hands the bytes to the GPU: no
DataLoader worker and no worker -> trainer copy of decoded frames (a GOP is ~10-40 kB, its
frames 0.9 MB each at 640x480). On a machine with the GPU and the extra::

    frames = take_frames_on_device(ds, rows, "observation_images_top", device="cuda")
    frames.shape, frames.device  # (torch.Size([32, 3, 480, 640]), device(type='cuda', index=0))

Without them the decoder says why; the same seam runs with any decoder of GOP bytes, here
PyAV's on the CPU:

>>> nvdec_unavailable("cpu")
'cpu is not a CUDA device'
>>> from robodata.codec import plain_decode_gop
>>> class CpuGopDecoder:
...     def decode(self, data, wanted):
...         frames = np.stack(plain_decode_gop(data))[list(wanted)]
...         return torch.from_numpy(frames).permute(0, 3, 1, 2)  # [N, 3, H, W], as NVDEC's
>>> frames = take_frames_on_device(ds, range(32), "observation_images_top", decoder=CpuGopDecoder())
>>> frames.shape, frames.device
(torch.Size([32, 3, 480, 640]), device(type='cpu'))
>>> expected = ds.get_frames(range(32), cameras="top")["top"]
>>> torch.equal(frames, torch.from_numpy(expected).permute(0, 3, 1, 2))
True
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import numpy as np
import torch

from robodata.reader._dataset import gop_store


def nvdec_unavailable(device: str | torch.device = "cuda") -> str | None:
    """Why GOPs cannot be decoded on ``device`` here (None: they can)."""
    if torch.device(device).type != "cuda":
        return f"{device} is not a CUDA device"
    if importlib.util.find_spec("torchcodec") is None:
        return "torchcodec is not installed (pip install robodata[gpu])"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device"
    return None


class NvdecGopDecoder:
    """Decodes robodata GOPs with NVDEC through torchcodec; frames come back as uint8
    ``[N, 3, H, W]`` tensors on ``device``."""

    def __init__(self, device: str | torch.device = "cuda") -> None:
        reason = nvdec_unavailable(device)
        if reason is not None:
            raise RuntimeError(f"GPU decode is not available: {reason}")
        from torchcodec.decoders import VideoDecoder  # the optional dependency

        self._decoder_class = VideoDecoder
        self.device = torch.device(device)

    def decode(self, data: bytes, wanted: Sequence[int]) -> torch.Tensor:
        """Frames ``wanted`` (indices in the GOP) of one GOP, decoding no further than the last."""
        # The GOP is a raw H.264 elementary stream; FFmpeg's h264 demuxer numbers its frames in
        # order (display order is decode order: no B-frames), so index k is the GOP's frame k.
        decoder = self._decoder_class(bytes(data), device=str(self.device), seek_mode="approximate")
        last = max(wanted)
        frames = decoder.get_frames_in_range(start=0, stop=last + 1).data
        return frames[torch.as_tensor(list(wanted), device=frames.device)]


def take_frames_on_device(
    ds, indices, column: str, *, device: str | torch.device = "cuda", decoder: NvdecGopDecoder | None = None
) -> torch.Tensor:
    """Frames of rows ``indices`` in image ``column`` of RoboDataset ``ds``, decoded on the GPU:
    ``[N, 3, H, W]`` uint8 on ``device``. Each GOP is read once (verified) and decoded once."""
    decoder = decoder or NvdecGopDecoder(device)
    refs, in_gop = gop_store(ds).frame_refs(indices, column)
    unique, inverse = np.unique(refs, return_inverse=True)
    gop_bytes = gop_store(ds).read(unique)
    out: torch.Tensor | None = None
    for slot, ref in enumerate(unique.tolist()):
        rows = np.flatnonzero(inverse == slot)
        frames = decoder.decode(gop_bytes[ref], in_gop[rows].tolist())
        if out is None:
            out = torch.empty((len(refs), *frames.shape[1:]), dtype=frames.dtype, device=frames.device)
        out[torch.as_tensor(rows, device=frames.device)] = frames
    if out is None:
        raise ValueError("no rows given")
    return out
