"""GOP encode/decode on PyAV: bytes in, frames out. Knows nothing of Lance.

A new codec is one entry in ``codecs.CODECS``; nothing outside this package changes. ``psnr``
and ``jpeg_roundtrip`` measure what an encoding keeps (PSNR against the source, JPEG at a quality); ``frame_array``
and ``frame_shape`` turn a decoded picture into an array in one of robodata's layouts.
"""

from robodata.codec._codecs import CODECS, Codec, codec_named
from robodata.codec._gop_decoder import decode_gop_frames, plain_decode_gop
from robodata.codec._gop_encoder import EncodedGop, GopEncoder
from robodata.codec._quality import jpeg_roundtrip, psnr
from robodata.codec._resize import frame_array, frame_shape
from robodata.codec._settings import EncoderSettings

__all__ = [
    "CODECS",
    "Codec",
    "EncodedGop",
    "EncoderSettings",
    "GopEncoder",
    "codec_named",
    "decode_gop_frames",
    "frame_array",
    "frame_shape",
    "jpeg_roundtrip",
    "plain_decode_gop",
    "psnr",
]
