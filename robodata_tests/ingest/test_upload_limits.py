"""Uploads past the limits are refused before their big parts are read: a 200 MB task text in
episode.json costs the ingest no more memory than a normal refusal (measured in a subprocess:
its peak RSS), and 100,000-deep nesting is a clear error, not a RecursionError traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from robodata.errors import BadUploadError
from robodata.ingest import read_upload
from robodata.ingest._upload_limits import MAX_JSON_DEPTH, float_matrix, parse_episode_json
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
