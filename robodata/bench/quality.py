"""Picture quality and the one-JPEG-per-frame storage baseline."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def psnr(reference: np.ndarray, test: np.ndarray) -> float:
    """Peak signal-to-noise ratio in dB between two uint8 images (inf when identical)."""
    mse = np.mean((reference.astype(np.float64) - test.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else float(10 * np.log10(255.0**2 / mse))


def jpeg_roundtrip(rgb: np.ndarray, quality: int) -> tuple[int, np.ndarray]:
    """(bytes, decoded image) of ``rgb`` as a JPEG at ``quality`` (Pillow/libjpeg)."""
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="JPEG", quality=quality)
    size = buffer.tell()
    buffer.seek(0)
    return size, np.asarray(Image.open(buffer).convert("RGB"))
