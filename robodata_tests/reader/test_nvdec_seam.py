"""The GPU decode seam: without a CUDA device and torchcodec it says what is missing; with them,
its frames match PyAV's decode of the same rows."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.reader._dataset import gop_store

torch = pytest.importorskip("torch")
from robodata.torch._nvdec import NvdecGopDecoder, nvdec_unavailable, take_frames_on_device  # noqa: E402

TOP = "observation_images_top"


def test_without_a_gpu_the_decoder_says_what_is_missing():
    reason = nvdec_unavailable()
    if reason is None:
        pytest.skip("this machine can decode on the GPU")
    with pytest.raises(RuntimeError, match="GPU decode is not available: .*(torchcodec|CUDA)"):
        NvdecGopDecoder()
    assert nvdec_unavailable("cpu") == "cpu is not a CUDA device"


def test_frame_refs_point_each_row_at_its_gop_and_frame(ingested):
    ds = robodata.open(ingested)
    rows = [0, 5, 77]
    refs, in_gop = gop_store(ds).frame_refs(rows, TOP)
    assert set(refs.tolist()) == set(gop_store(ds).refs(rows, TOP).tolist())
    gops = gop_store(ds).read(np.unique(refs))
    from robodata.codec import plain_decode_gop

    expected = ds.get_frames(rows, cameras="top")["top"]
    for i, (ref, k) in enumerate(zip(refs.tolist(), in_gop.tolist(), strict=True)):
        np.testing.assert_array_equal(plain_decode_gop(gops[ref])[k], expected[i])


@pytest.mark.skipif(nvdec_unavailable() is not None, reason=f"no GPU decode here: {nvdec_unavailable()}")
def test_gpu_frames_match_the_cpu_decode(ingested):
    ds = robodata.open(ingested)
    rows = [0, 3, 50, 101, len(ds) - 1]
    on_device = take_frames_on_device(ds, rows, TOP)
    assert on_device.is_cuda and on_device.shape == (len(rows), 3, 480, 640)
    cpu = torch.from_numpy(ds.get_frames(rows, cameras="top")["top"]).permute(0, 3, 1, 2)
    diff = (on_device.cpu().int() - cpu.int()).abs()
    assert diff.float().mean() < 2.0  # NVDEC's colour conversion rounds differently from swscale
