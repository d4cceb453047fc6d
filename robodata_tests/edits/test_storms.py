"""Concurrency storms: in each round, writers of new episodes, two writers of one episode, an
annotation, a delete, a compaction (``compact --older-than 0 --gc-min-age 0``) and a garbage
collection run at once, each in its own process. After every round: each episode's rows once,
each GOP once, every label written so far still there, every retained version readable."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow.compute as pc
import pytest

import robodata
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.integrity._verify import verify_dataset
from robodata_tests.crash_helpers import finish, start
from robodata_tests.dataset_checks import assert_one_copy

pytestmark = pytest.mark.slow

# Episodes (of eight_short_uploads) per round: ingested new, written by two writers at once,
# deleted, labelled. Round 3 re-adds a deleted episode and re-ingests a labelled one twice.
ROUNDS = [
    {"new": [3, 4], "same": 5, "delete": [2], "label": [0, 1]},
    {"new": [6], "same": 7, "delete": [3], "label": [0, 4]},
    {"new": [2], "same": 4, "delete": [5], "label": [1, 6]},
]


def _storm(root: str, uploads, options: dict | None, spec: dict, round_: int) -> None:
    labels = {
        "episode_index": spec["label"],
        "frame_index": [round_] * len(spec["label"]),
        f"storm_{round_}": [round_ + 1] * len(spec["label"]),
    }
    ops = [("ingest", {"upload": str(uploads[e])}) for e in [*spec["new"], spec["same"], spec["same"]]]
    ops += [
        ("annotate", {"labels": labels}),
        ("delete", {"episodes": spec["delete"]}),
        ("compact", {}),
        ("gc", {}),
    ]
    with ThreadPoolExecutor(len(ops)) as pool:
        procs = list(pool.map(lambda op: start(op[0], root, options, **op[1]), ops))
        outputs = list(pool.map(finish, procs))
    assert all("done" in out for out in outputs), outputs


def _check(root: str, options: dict | None, expected: dict[int, int], labels: dict[str, set]) -> None:
    ds = robodata.open(root, storage_options=options)
    assert_one_copy(ds, expected)
    ref_ids = open_table(gops_uri(root), options).to_table(columns=["ref_id"])["ref_id"].to_numpy()
    assert len(ref_ids) == len(np.unique(ref_ids)), f"{len(ref_ids) - len(np.unique(ref_ids))} duplicate GOP rows"
    table = open_table(frames_uri(root), options).to_table()
    for name, keys in labels.items():
        held = table.filter(pc.is_valid(table[name]))
        found = set(zip(held["episode_index"].to_pylist(), held["frame_index"].to_pylist(), strict=True))
        assert found == keys, name
    frames = open_table(frames_uri(root), options)
    for info in frames.versions():
        report = verify_dataset(root, version=info["version"], storage_options=options)
        assert report.ok, report.summary()


def _storms(root: str, uploads, options: dict | None, rounds: int = len(ROUNDS)) -> int:
    expected: dict[int, int] = {}
    for e in (0, 1, 2):
        expected[e] = robodata.ingest_episode(str(uploads[e]), root, storage_options=options).rows
    labels: dict[str, set] = {}
    for round_, spec in enumerate(ROUNDS[:rounds]):
        _storm(root, uploads, options, spec, round_)
        for e in [*spec["new"], spec["same"]]:
            expected[e] = _rows_of(uploads[e])
        for e in spec["delete"]:
            expected.pop(e)
        labels[f"storm_{round_}"] = {(e, round_) for e in spec["label"]}
        _check(root, options, expected, labels)
    return rounds


def _rows_of(upload) -> int:
    import pyarrow.parquet as pq

    return pq.read_metadata(str(upload) + "/states.parquet").num_rows


def test_storms_local(tmp_path, eight_short_uploads):
    _storms(str(tmp_path / "ds"), eight_short_uploads, None)


def test_storms_s3(s3, s3_root, eight_short_uploads):
    _storms(s3_root, eight_short_uploads, s3.storage_options, rounds=1)  # moto serves 8 writers slowly
