"""``robodata sample-data s3://...``: the uploads are written to the bucket, each folder's
episode.json last (it marks the upload complete), the same episodes as a local write."""

from __future__ import annotations

import pyarrow.parquet as pq

from robodata.cli import main
from robodata.storage import fsspec_filesystem


def test_sample_data_writes_uploads_to_s3_with_episode_json_last(s3, s3_root, tmp_path, monkeypatch):
    for name, value in s3.environ.items():
        monkeypatch.setenv(name, value)
    uploads = f"{s3_root}/uploads"
    mark = s3.mark()
    assert main(["sample-data", uploads, "--episodes", "2", "--seconds", "0.5", "--start-index", "3"]) == 0
    assert (
        main(["sample-data", str(tmp_path / "local"), "--episodes", "2", "--seconds", "0.5", "--start-index", "3"]) == 0
    )

    fs = fsspec_filesystem(uploads, s3.storage_options)
    remote = sorted(p.split("/uploads/", 1)[1] for p in fs.find(uploads))
    local = sorted(p.relative_to(tmp_path / "local").as_posix() for p in (tmp_path / "local").rglob("*") if p.is_file())
    assert remote == local and len(remote) == 2 * 5  # three videos, states.parquet, episode.json
    for folder in ("episode_000003", "episode_000004"):
        with fs.open(f"{uploads}/{folder}/states.parquet", "rb") as f:
            assert pq.read_table(f).equals(pq.read_table(tmp_path / "local" / folder / "states.parquet"))
        puts = [r.path for r in s3.requests(mark) if r.method == "PUT" and f"/{folder}/" in r.path]
        assert len(puts) == 5 and puts[-1].endswith("/episode.json")
