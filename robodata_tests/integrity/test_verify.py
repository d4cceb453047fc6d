"""``robodata verify``: a sound dataset passes; a flipped byte, a missing GOP and a GOP that no
longer decodes are each reported by name and the command exits non-zero."""

from __future__ import annotations

import lance
import numpy as np

import robodata
from robodata.cli import main as cli
from robodata.format._tables import gops_uri
from robodata.integrity._verify import verify_dataset
from robodata.reader._dataset import gop_store
from robodata_tests.integrity.test_corruption import flip_gop_bytes

TOP = "observation_images_top"


def test_a_sound_dataset_verifies_with_and_without_decoding(ingested, capsys):
    gops = lance.dataset(gops_uri(ingested)).count_rows()
    report = verify_dataset(ingested, decode=True)
    assert report.ok, report.problems
    assert (report.gops.checked, report.gops.decoded, report.episodes) == (gops, gops, 3)
    assert report.rows == len(robodata.open(ingested))
    assert cli(["verify", ingested]) == 0
    out = capsys.readouterr().out
    assert f"{gops} GOPs checksummed" in out and "OK: every GOP and every row reference holds" in out


def test_verify_names_a_corrupt_gop_and_fails(dataset_copy, capsys):
    ds = robodata.open(dataset_copy)
    rows = ds.to_table(columns=["episode_index", "observation_images_top_gop_index"])
    row = int(
        np.flatnonzero(
            (rows["episode_index"].to_numpy() == 2) & (rows["observation_images_top_gop_index"].to_numpy() == 5)
        )[0]
    )
    [ref] = gop_store(ds).refs([row], TOP)
    flip_gop_bytes(dataset_copy, gop_store(ds).read([ref])[int(ref)], at=0.7)
    report = verify_dataset(dataset_copy)
    assert len(report.problems) == 1
    assert report.problems[0].startswith(f"GOP 5 of episode 2, camera 'top' (ref_id {ref}) is corrupt: xxh3_64")
    assert cli(["verify", dataset_copy, "--decode"]) == 1
    assert f"GOP 5 of episode 2, camera 'top' (ref_id {ref}) is corrupt" in capsys.readouterr().out
    # An old version reads the same GOP bytes: it is reported too.
    assert not verify_dataset(dataset_copy, version=1).ok


def test_verify_reports_rows_pointing_at_missing_gops(dataset_copy):
    gops = lance.dataset(gops_uri(dataset_copy))
    lost = gops.to_table(columns=["ref_id"], filter="episode_index = 1 AND camera = 'wrist_left' AND gop_index = 0")
    gops.delete(f"ref_id = {lost['ref_id'][0].as_py()}")
    report = verify_dataset(dataset_copy)
    assert report.gops.problems == []
    [problem] = report.problems
    assert "rows point at GOPs that are missing or belong elsewhere (per camera {'wrist_left':" in problem
    assert "first at episode 1, frame_index 0" in problem


def test_decode_finds_a_gop_whose_frames_have_the_wrong_size(dataset_copy, capsys):
    """A GOP row whose bytes (and checksum) are another camera's: only decoding can tell."""
    from robodata.format._schema import GOPS_SCHEMA
    from robodata.format._tables import append_or_create
    from robodata.integrity._gop_checksums import ROW_CHECKSUM_COLUMN, gop_checksum, row_checksum

    gops = lance.dataset(gops_uri(dataset_copy))
    columns = [f.name for f in GOPS_SCHEMA if f.name != "gop"]
    first = "episode_index = 0 AND gop_index = 0 AND camera = "
    top = gops.to_table(columns=columns, filter=first + "'top'", with_row_id=True)
    wrist = gops.to_table(columns=columns, filter=first + "'wrist_left'", with_row_id=True)
    [(_, data)] = gops.read_blobs("gop", ids=wrist["_rowid"].to_pylist())
    row = top.drop_columns(["_rowid"]).to_pylist()[0]
    row.update(
        ref_id=12345,
        gop_index=99,
        packet_sizes=wrist["packet_sizes"][0].as_py(),
        n_frames=wrist["n_frames"][0].as_py(),
        gop_xxh3=gop_checksum(data),
        gop=data,
    )
    row[ROW_CHECKSUM_COLUMN] = row_checksum(row)  # the row's columns vouched for as written
    table = lance_table([row])
    append_or_create(gops_uri(dataset_copy), table, GOPS_SCHEMA)
    assert verify_dataset(dataset_copy).ok  # the checksum matches the (wrong) bytes
    [problem] = verify_dataset(dataset_copy, decode=True).problems
    assert problem == (
        "GOP 99 of episode 0, camera 'top' (ref_id 12345) decodes to 320x240 frames, its row says 640x480"
    )
    assert cli(["verify", dataset_copy, "--decode"]) == 1


def lance_table(rows: list[dict]):
    import pyarrow as pa

    from robodata.format._schema import GOPS_SCHEMA

    columns = {f.name: [r[f.name] for r in rows] for f in GOPS_SCHEMA if f.name != "gop"}
    columns["gop"] = lance.blob_array([r["gop"] for r in rows])
    return pa.table(columns, schema=GOPS_SCHEMA)
