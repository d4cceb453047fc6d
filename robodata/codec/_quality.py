"""Picture quality: PSNR between a source frame and its decoded copy, and the one-JPEG-per-frame
baseline the demo and the benchmarks compare GOP bytes with.

>>> import numpy as np
>>> frame = np.zeros((4, 4, 3), np.uint8)
>>> psnr(frame, frame), round(psnr(frame, frame + 1), 2)
(inf, 48.13)
"""

from __future__ import annotations

import io

import numpy as np


def psnr(reference: np.ndarray, test: np.ndarray) -> float:
    """Peak signal-to-noise ratio in dB between two uint8 images (inf when identical)."""
    mse = np.mean((reference.astype(np.float64) - test.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else float(10 * np.log10(255.0**2 / mse))


def jpeg_roundtrip(rgb: np.ndarray, quality: int, subsampling: int | None = None) -> tuple[int, np.ndarray]:
    """(bytes, decoded image) of ``rgb`` as a JPEG at ``quality`` (Pillow/libjpeg); ``subsampling``
    is Pillow's chroma option (0 = 4:4:4, 2 = 4:2:0, None = Pillow's default, 4:2:0)."""
    from PIL import Image  # only the JPEG baseline needs Pillow

    buffer = io.BytesIO()
    options = {} if subsampling is None else {"subsampling": subsampling}
    Image.fromarray(rgb).save(buffer, format="JPEG", quality=quality, **options)
    size = buffer.tell()
    buffer.seek(0)
    return size, np.asarray(Image.open(buffer).convert("RGB"))
