"""Uploads past the limits are refused before their big parts are read: a 200 MB task text in
episode.json costs the ingest no more memory than a normal refusal (measured in a subprocess:
its peak RSS), 100,000-deep nesting is a clear error, not a RecursionError traceback, and a
camera or states file over its size or time limit is refused by name, nothing written."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from robodata.errors import BadUploadError
from robodata.ingest import read_upload
from robodata.ingest._upload_limits import (
    FILE_TIMEOUT_ENV,
    MAX_JSON_DEPTH,
    FileClock,
    float_matrix,
    parse_episode_json,
)
from robodata_tests.peak_memory import robodata_peak_rss_mb

REPO = Path(__file__).resolve().parents[2]
# Peak RSS of a refusal: the interpreter with robodata, Lance, pyarrow and PyAV imported is some
# 300-500 MB; reading a 200 MB text (and one string per row from it) would add gigabytes.
PEAK_RSS_BOUND_MB = 1200


def _write_huge_task(path: Path, meta: dict, text_mb: int) -> None:
    """episode.json with a ``task`` of ``text_mb`` MB, written in pieces (the test stays small too)."""
    rest = {k: v for k, v in meta.items() if k != "task"}
    head = json.dumps(rest)[:-1] + ', "task": "'
    with path.open("w") as out:
        out.write(head)
        chunk = "pick up the red cube " * 50_000  # ~1 MB
        for _ in range(text_mb):
            out.write(chunk)
        out.write('"}')


def test_a_200_mb_task_is_refused_in_bounded_memory(sample_uploads, tmp_path):
    upload = tmp_path / "uploads" / sample_uploads[1].name
    shutil.copytree(sample_uploads[1], upload)
    meta = json.loads((upload / "episode.json").read_text())
    _write_huge_task(upload / "episode.json", meta, 200)
    assert (upload / "episode.json").stat().st_size > 200_000_000
    code, err, peak_mb = robodata_peak_rss_mb("ingest", str(upload), str(tmp_path / "ds"))
    print(f"200 MB task: exit {code}, peak RSS {peak_mb:.0f} MB: {err.strip()}")
    assert code == 2, err
    assert "episode.json: is " in err and "bytes; episode.json may be at most 1,048,576" in err, err
    assert "Traceback" not in err
    assert peak_mb < PEAK_RSS_BOUND_MB
    assert not (tmp_path / "ds").exists()  # nothing written


def test_deep_nesting_is_a_clear_error_without_recursion(tmp_path):
    with pytest.raises(BadUploadError, match="nests 100000 levels deep"):
        parse_episode_json("ep/episode.json", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(BadUploadError, match=f"nests {MAX_JSON_DEPTH + 1} levels deep"):
        parse_episode_json("ep/episode.json", '{"a": ' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1))
    # Brackets inside strings are text, not nesting.
    assert parse_episode_json("ep/episode.json", json.dumps({"task": '[[[[[[[[[[{{{{{{{{{{\\"]'})) == {
        "task": '[[[[[[[[[[{{{{{{{{{{\\"]'
    }


def test_state_columns_convert_without_python_objects():
    import numpy as np
    import pyarrow as pa

    column = pa.chunked_array([pa.array([[1.0, 2.0], [3.0, 4.0]]), pa.array([[5.0, 6.0]])])
    assert float_matrix("s.parquet", "action", column).tolist() == [[1, 2], [3, 4], [5, 6]]
    assert float_matrix("s.parquet", "action", column).dtype == np.float32
    with pytest.raises(BadUploadError, match="action has a null value in sample 1"):
        float_matrix("s.parquet", "action", pa.chunked_array([pa.array([[1.0, 2.0], [3.0, None]])]))


def test_a_normal_upload_is_within_every_limit(sample_uploads):
    assert read_upload(str(sample_uploads[1])).episode_index == 1


def _refused_with_dataset_unchanged(upload: Path, dataset: str, message: str) -> None:
    import robodata
    from robodata.format._tables import gops_uri, open_table

    before, gops_before = robodata.open(dataset).version, open_table(gops_uri(dataset)).version
    with pytest.raises(BadUploadError) as raised:
        robodata.ingest_episode(str(upload), dataset, uploads_root=str(upload.parent))
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert robodata.open(dataset).version == before
    assert open_table(gops_uri(dataset)).version == gops_before


def test_upload_files_over_their_size_limit_are_refused_before_they_are_read(
    sample_uploads, dataset_copy, tmp_path, monkeypatch
):
    import robodata.ingest._upload as upload_module

    upload = tmp_path / "uploads" / sample_uploads[1].name
    shutil.copytree(sample_uploads[1], upload)
    video_bytes = (upload / "top.mp4").stat().st_size
    monkeypatch.setattr(upload_module, "MAX_VIDEO_BYTES", video_bytes - 1)
    _refused_with_dataset_unchanged(
        upload,
        dataset_copy,
        f"top.mp4: is {video_bytes:,} bytes; an upload's camera file may be at most {video_bytes - 1:,}",
    )
    monkeypatch.undo()
    states_bytes = (upload / "states.parquet").stat().st_size
    monkeypatch.setattr(upload_module, "MAX_STATES_BYTES", 1000)
    _refused_with_dataset_unchanged(
        upload, dataset_copy, f"states.parquet: is {states_bytes:,} bytes; an upload's states file may be at most 1,000"
    )


def test_a_camera_file_over_the_time_limit_is_refused(sample_uploads, dataset_copy, tmp_path, monkeypatch):
    upload = tmp_path / "uploads" / sample_uploads[1].name
    shutil.copytree(sample_uploads[1], upload)
    monkeypatch.setenv(FILE_TIMEOUT_ENV, "1e-9")  # no file can be read and decoded in a nanosecond
    _refused_with_dataset_unchanged(
        upload,
        dataset_copy,
        "top.mp4: reading and decoding took over 1e-09 s, the limit for one upload file ($ROBODATA_UPLOAD_FILE_TIMEOUT_S)",
    )


def test_the_file_clock_stops_while_the_caller_works_on_what_the_file_gave():
    clock = FileClock("ep/top.mp4", limit_s=0.05)
    clock.pause()
    time.sleep(0.1)  # the ingest encoding a frame: not the file's time
    clock.check()
    clock.resume()
    time.sleep(0.1)
    with pytest.raises(BadUploadError, match="ep/top.mp4: reading and decoding took over 0.05 s"):
        clock.check()
