"""Frames resized to the policy's size with the kernel of the peers' ``torchvision`` ``v2.Resize``
(robodata's venv has no torchvision): how robodata reads at a size where its readers take no
``resolution=`` (or ``ROBODATA_BENCH_SIZE_PATH=resize`` asks for it). Imports torch and numpy only
when called, so the runner's modules stay importable in either venv.
"""

from __future__ import annotations


class ResizeFrame:
    """Resize one C x H x W (or T x C x H x W) frame tensor: bilinear with antialiasing, the kernel
    torchvision's ``v2.Resize`` runs on tensors (the peers' transform; robodata's venv has no
    torchvision). uint8 stays uint8."""

    def __init__(self, size) -> None:
        self.size = tuple(int(v) for v in size)

    def __call__(self, frame):
        import torch

        lead = frame.shape[:-3]
        flat = frame.reshape(-1, *frame.shape[-3:])
        if flat.dtype == torch.uint8:
            out = torch.nn.functional.interpolate(flat, size=self.size, mode="bilinear", antialias=True)
        else:
            out = torch.nn.functional.interpolate(flat.float(), size=self.size, mode="bilinear", antialias=True)
        return out.reshape(*lead, *out.shape[-3:])


class ResizeBatch:
    """``make_dataloader``'s ``transform``: every image column of a numpy batch ([N, H, W, 3] or
    [N, T, H, W, 3] uint8) resized to ``size`` with ``ResizeFrame``'s kernel."""

    def __init__(self, size) -> None:
        self.frame = ResizeFrame(size)

    def __call__(self, batch: dict) -> dict:
        return {k: resize_hwc(v, self.frame.size) if _is_image(k, v) else v for k, v in batch.items()}


def _is_image(key: str, value) -> bool:
    return "images" in key and not key.endswith("_is_pad") and getattr(value, "ndim", 0) >= 4


def resize_hwc(frames, size):
    """[..., H, W, 3] uint8 numpy frames resized to ``size`` (H, W), same layout and dtype."""
    import numpy as np
    import torch

    array = np.asarray(frames)
    tensor = torch.from_numpy(np.ascontiguousarray(array)).movedim(-1, -3)
    out = ResizeFrame(size)(tensor).movedim(-3, -1).contiguous()
    return out.numpy()
