"""GOP encode/decode on PyAV: bytes in, frames out. Knows nothing of Lance."""

from robodata.codec.gop_decoder import decode_gop_frames, plain_decode_gop
from robodata.codec.gop_encoder import EncodedGop, EncoderSettings, GopEncoder

__all__ = ["EncodedGop", "EncoderSettings", "GopEncoder", "decode_gop_frames", "plain_decode_gop"]
