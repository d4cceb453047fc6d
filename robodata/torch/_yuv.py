"""YUV 4:2:0 frames to RGB on the training device.

A loader built with ``pixel_format="yuv420p"`` hands over each frame as the decoder's planar
I420 picture, ``[..., H*3/2, W]`` uint8 (Y, then U, then V at half resolution): half the bytes
of RGB through the worker -> trainer queue and no colour conversion on the CPU. The training
step converts the batch where it trains; on a GPU, after moving it there::

    rgb = yuv420_to_rgb(batch["observation_images_top"].to("cuda", non_blocking=True))

and on the CPU alike:

>>> from robodata.torch._torch_dataset import make_dataloader
>>> batch = next(iter(make_dataloader("data/demo", batch_size=4, pixel_format="yuv420p")))
>>> batch["observation_images_top"].shape  # 480 rows of Y, then 240 of U and V
torch.Size([4, 720, 640])
>>> rgb = yuv420_to_rgb(batch["observation_images_top"])
>>> rgb.shape, rgb.dtype
(torch.Size([4, 3, 480, 640]), torch.float32)

The conversion is FFmpeg's (swscale's) for the H.264 streams robodata writes: BT.601
coefficients, limited ("TV") range, each chroma sample covering its 2 x 2 luma block; it matches
PyAV's ``to_ndarray(format="rgb24")`` within 3 levels per channel (the rounding of swscale's
fixed-point arithmetic).
"""

from __future__ import annotations

import torch

# BT.601, limited range: Y in [16, 235], U and V in [16, 240] centred on 128.
_Y_SCALE = 255.0 / 219.0
_C_SCALE = 255.0 / 224.0
_R_V, _G_U, _G_V, _B_U = 1.402, -0.344136, -0.714136, 1.772


def yuv420_to_rgb(frames: torch.Tensor, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``[..., H*3/2, W]`` uint8 I420 frames as ``[..., 3, H, W]`` RGB on the same device:
    float in [0, 1] (``dtype=torch.float32``, the default, or another float dtype) or uint8
    (``dtype=torch.uint8``), channels first as a policy's image input.

    >>> yuv420_to_rgb(torch.full((6, 4), 128, dtype=torch.uint8), dtype=torch.uint8)[:, 0, 0].tolist()
    [130, 130, 130]
    """
    if frames.dtype != torch.uint8:
        raise TypeError(f"expected uint8 I420 frames, got {frames.dtype}")
    rows, width = frames.shape[-2], frames.shape[-1]
    height = rows * 2 // 3
    if rows % 3 or height % 2 or width % 2:
        raise ValueError(f"an I420 frame is H*3/2 x W with even H and W, got {rows} x {width}")
    lead = frames.shape[:-2]
    flat = frames.reshape(*lead, rows * width)
    quarter = (height // 2) * (width // 2)
    y = flat[..., : height * width].reshape(*lead, height, width)
    u = flat[..., height * width : height * width + quarter].reshape(*lead, height // 2, width // 2)
    v = flat[..., height * width + quarter :].reshape(*lead, height // 2, width // 2)
    work = torch.float32 if dtype == torch.uint8 else dtype
    luma = (y.to(work) - 16.0) * _Y_SCALE
    cb = ((u.to(work) - 128.0) * _C_SCALE).repeat_interleave(2, -2).repeat_interleave(2, -1)
    cr = ((v.to(work) - 128.0) * _C_SCALE).repeat_interleave(2, -2).repeat_interleave(2, -1)
    rgb = torch.stack([luma + _R_V * cr, luma + _G_U * cb + _G_V * cr, luma + _B_U * cb], dim=-3)
    rgb = rgb.clamp_(0.0, 255.0)
    if dtype == torch.uint8:
        return rgb.round_().to(torch.uint8)
    return rgb.div_(255.0)
