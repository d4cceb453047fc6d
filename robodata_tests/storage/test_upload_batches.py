"""Listing upload batches (<uploads>/<batch>/<episode_id>/): one listing of the root, local or
s3://, grouped into batches of complete and incomplete uploads, fingerprinted as listing each
upload folder would."""

import shutil

import pytest

from robodata.storage import fsspec_filesystem
from robodata.storage._upload_batches import batch_fingerprint, scan_upload_batches
from robodata.storage._uploads import upload_fingerprint


@pytest.mark.parametrize("where", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_one_listing_groups_uploads_into_batches(where, request, eight_short_uploads, tmp_path):
    layout = {"a/": eight_short_uploads[:2], "b/": eight_short_uploads[2:3], "": eight_short_uploads[3:4]}
    if where == "s3":
        s3 = request.getfixturevalue("s3")
        root, options = s3.fresh_uri("batches") + "/uploads", s3.storage_options
        for prefix, uploads in layout.items():
            for upload in uploads:
                s3.put_tree(upload, f"{root}/{prefix}{upload.name}")
    else:
        root, options = str(tmp_path / "uploads"), None
        for prefix, uploads in layout.items():
            for upload in uploads:
                shutil.copytree(upload, tmp_path / "uploads" / f"{prefix}{upload.name}")
    fs = fsspec_filesystem(root, options)
    fs.makedirs(f"{root}/b/episode_000009", exist_ok=True)
    fs.makedirs(f"{root}/a/{eight_short_uploads[0].name}/extra", exist_ok=True)
    fs.pipe_file(f"{root}/b/episode_000009/states.parquet", b"still uploading")  # no episode.json yet
    fs.pipe_file(f"{root}/a/{eight_short_uploads[0].name}/extra/notes.txt", b"not part of the upload")
    fs.pipe_file(f"{root}/a/readme.txt", b"not an upload")

    mark = request.getfixturevalue("s3").mark() if where == "s3" else 0
    batches = scan_upload_batches(root, options)
    if where == "s3":
        assert len(request.getfixturevalue("s3").requests(mark)) == 1  # one LIST page for the whole root

    # The flat upload (per-episode partitioning) belongs to no batch.
    assert [b.batch_id for b in batches] == ["a", "b"]
    a, b = batches
    assert [u.episode_id for u in a.complete] == [u.name for u in eight_short_uploads[:2]]
    assert [u.episode_id for u in b.complete] == [eight_short_uploads[2].name]
    assert [u.episode_id for u in b.incomplete] == ["episode_000009"] and a.incomplete == []
    for upload in a.complete + b.complete:
        assert upload.fingerprint == upload_fingerprint(upload.uri, options)
    assert a.fingerprint == batch_fingerprint(a.complete) != b.fingerprint
    assert b.last_write >= max(u.last_write for u in b.incomplete)


def test_a_missing_root_has_no_batches(tmp_path):
    assert scan_upload_batches(str(tmp_path / "nowhere")) == []
