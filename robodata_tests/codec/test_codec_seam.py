"""The codec seam: a codec added as one CODECS entry is written by ingest, recorded per GOP
row, and decoded on the read path with the codec that row names."""

import lance
import numpy as np
import pytest

import robodata
from robodata.codec import CODECS, Codec, EncoderSettings, plain_decode_gop
from robodata.format._schema import ref_columns
from robodata.format._tables import gops_uri

# MPEG-4 Part 2: FFmpeg's native encoder; every keyframe carries its own headers, no B-frames.
MPEG4 = Codec("mpeg4", "mpeg4", "yuv420p", lambda s: {"g": str(s.gop_size), "bf": "0", "qscale": "2"})


def test_a_codec_added_in_codec_only_is_written_and_read_back(sample_uploads, tmp_path, monkeypatch):
    monkeypatch.setitem(CODECS, "mpeg4", MPEG4)
    root = str(tmp_path / "ds")
    robodata.ingest_episode(str(sample_uploads[0]), root, settings=EncoderSettings(codec="mpeg4", gop_size=4))
    ds = robodata.open(root)
    assert ds.metadata.codec["name"] == "mpeg4" and ds.metadata.gop_size == 4
    gops = lance.dataset(gops_uri(root))
    table = gops.to_table(columns=["ref_id", "codec"], with_row_id=True)
    assert set(table["codec"].to_pylist()) == {"mpeg4"}

    rows = [0, 37, len(ds) - 1]
    got = ds.get_frames(rows, cameras="top")["top"]
    ref_id, _, in_gop = ref_columns("top")
    pointers = ds.lance_dataset.take(rows, columns=[ref_id, in_gop]).to_pylist()
    row_ids = dict(zip(table["ref_id"].to_pylist(), table["_rowid"].to_pylist(), strict=True))
    for slot, pointer in enumerate(pointers):
        [(_, data)] = gops.read_blobs("gop", ids=[row_ids[pointer[ref_id]]])
        reference = plain_decode_gop(data, codec="mpeg4")[pointer[in_gop]]
        np.testing.assert_array_equal(got[slot], reference)


def test_an_unknown_codec_is_refused_before_any_frame_is_encoded():
    with pytest.raises(ValueError, match="unknown codec 'vp9'; robodata stores h264"):
        EncoderSettings(codec="vp9")
