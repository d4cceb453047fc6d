"""A training rendition of one GOP: the same frames, smaller, as a closed GOP of its own.

The full-resolution GOP is decoded, each frame scaled by ``resize.resized_rgb`` (the resize
the reader applies when it has no rendition of a size) and encoded by a fresh encoder, so the
rendition GOP has exactly the frames of its source and a row's (gop_index, frame_index_in_gop)
holds in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from robodata.codec._gop_decoder import decode_gop_frames
from robodata.codec._gop_encoder import EncodedGop, GopEncoder
from robodata.codec._settings import EncoderSettings


def render_gop(
    data: bytes,
    packet_sizes: Sequence[int],
    codec: str,
    size: tuple[int, int],
    fps: float,
    settings: EncoderSettings,
) -> EncodedGop:
    """The GOP ``data`` (stored in ``codec``) re-encoded at ``size`` (height, width) with
    ``settings`` (the dataset's); one GOP with as many frames as the source.

    >>> from robodata.codec import plain_decode_gop
    >>> frames = [np.full((96, 128, 3), 40 * i, np.uint8) for i in range(4)]
    >>> encoder = GopEncoder(128, 96, fps=30, settings=EncoderSettings(gop_size=4))
    >>> [gop] = [g for f in frames for g in encoder.add(f)] + encoder.finish()
    >>> small = render_gop(gop.data, gop.packet_sizes, "h264", (48, 64), 30.0, EncoderSettings())
    >>> small.n_frames, [f.shape for f in plain_decode_gop(small.data)][0]
    (4, (48, 64, 3))
    """
    height, width = size
    frames = decode_gop_frames(data, packet_sizes, list(range(len(packet_sizes))), codec=codec, size=size)
    # keyint = G >= the source GOP's frame count: one encoder per GOP writes exactly one GOP.
    encoder = GopEncoder(width, height, fps, replace(settings, gop_size=max(settings.gop_size, len(frames))))
    gops = [gop for rgb in frames for gop in encoder.add(rgb)] + encoder.finish()
    if len(gops) != 1 or gops[0].n_frames != len(frames):
        raise RuntimeError(
            f"a {len(frames)}-frame GOP re-encoded at {width}x{height} gave {[g.n_frames for g in gops]}"
        )
    return gops[0]
