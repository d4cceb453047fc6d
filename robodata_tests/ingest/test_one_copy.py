"""Exactly one copy, whatever the timing: two writers of the same new episode, both held just
before each of their commits (GOPs, then rows) and released together, 2 rounds on a local disk
and on s3:// (the gate forces the same interleaving every round, so more rounds add CI minutes,
not cases: a second round shows the first's outcome was not luck). Each round races twice: into
an empty root (both try to create the tables) and into a dataset that already holds another
episode (both merge into it)."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest

import robodata
import robodata.ingest._writer as writer
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.ingest import read_upload
from robodata_tests.ingest.race_hooks import held_commits, run_together

ROUNDS = 2
S3_ROUNDS = 2


@pytest.fixture
def encode_once(monkeypatch):
    """Encode each camera once per test: the race is in the commits, not the encoder (which is
    deterministic: a re-ingest reuses every GOP)."""
    encode, done, lock = writer.encode_camera, {}, threading.Lock()

    def encode_camera(episode_index, camera, settings):
        key = (episode_index, camera.source, repr(settings))
        with lock:
            if key not in done:
                done[key] = encode(episode_index, camera, settings)
            return done[key]

    monkeypatch.setattr(writer, "encode_camera", encode_camera)


def _copies(root: str, options: dict | None) -> tuple[dict[int, int], int, int]:
    """(rows per episode, frame rows beyond one per (episode, frame_index), GOP rows beyond one
    per ref_id)."""
    rows = open_table(frames_uri(root), options).to_table(columns=["episode_index", "frame_index"])
    episodes = rows["episode_index"].to_numpy()
    keys = episodes * (1 << 32) + rows["frame_index"].to_numpy()
    refs = open_table(gops_uri(root), options).to_table(columns=["ref_id"])["ref_id"].to_numpy()
    per_episode = {int(e): int((episodes == e).sum()) for e in np.unique(episodes)}
    return per_episode, len(keys) - len(np.unique(keys)), len(refs) - len(np.unique(refs))


def _race(monkeypatch, episode, root: str, options: dict | None):
    with held_commits(monkeypatch) as gate:
        results = run_together(*[lambda: robodata.write_episode(episode, root, storage_options=options)] * 2)
    return results, gate.held


def _rounds(monkeypatch, uploads, new_root, options, rounds: int = ROUNDS) -> dict[str, int]:
    first, second = (read_upload(str(u), options) for u in uploads[:2])
    counts = {"races": 0, "extra_frame_rows": 0, "extra_gop_rows": 0}
    for _ in range(rounds):
        root = new_root()
        _, held_creating = _race(monkeypatch, first, root, options)  # nothing exists yet: both create
        robodata.write_episode(second, root, storage_options=options)
        results, held = _race(monkeypatch, second, root, options)  # ... and into an existing dataset
        counts["races"] += 2
        per_episode, extra_rows, extra_gops = _copies(root, options)
        counts["extra_frame_rows"] += extra_rows
        counts["extra_gop_rows"] += extra_gops
        assert per_episode == {first.episode_index: len(first), second.episode_index: len(second)}
        assert (extra_rows, extra_gops) == (0, 0)
        assert {r.gops for r in results} == {results[0].gops}
        assert held_creating == held == 4  # both writers were held at both of their commits
    ds = robodata.open(root, storage_options=options)
    decoded = ds.get_frames(np.arange(len(ds)))  # every reference resolves
    assert all(a.shape[0] == len(ds) for a in decoded.data.values())
    return counts


def test_two_writers_of_a_new_episode_leave_one_copy_on_a_local_disk(
    monkeypatch, eight_short_uploads, tmp_path, encode_once
):
    roots = iter(range(ROUNDS))
    counts = _rounds(monkeypatch, eight_short_uploads, lambda: str(tmp_path / f"ds{next(roots)}"), None)
    print(
        f"\nlocal: {counts['races']} forced races, {counts['extra_frame_rows']} duplicate rows, "
        f"{counts['extra_gop_rows']} duplicate GOP rows"
    )
    assert counts == {"races": 2 * ROUNDS, "extra_frame_rows": 0, "extra_gop_rows": 0}


def test_two_writers_of_a_new_episode_leave_one_copy_on_s3(monkeypatch, s3, eight_short_uploads, encode_once):
    # A writer held at its commit waits for the other inside the storage call's deadline; on a
    # busy machine that wait can pass the 60 s default, which is not what this test is about.
    monkeypatch.setenv("ROBODATA_STORAGE_TIMEOUT_S", "900")
    counts = _rounds(monkeypatch, eight_short_uploads, lambda: s3.fresh_uri("one-copy"), s3.storage_options, S3_ROUNDS)
    print(
        f"\ns3: {counts['races']} forced races, {counts['extra_frame_rows']} duplicate rows, "
        f"{counts['extra_gop_rows']} duplicate GOP rows"
    )
    assert counts == {"races": 2 * S3_ROUNDS, "extra_frame_rows": 0, "extra_gop_rows": 0}


def test_two_uploads_racing_for_one_episode_index_leave_one_episode(
    monkeypatch, eight_short_uploads, tmp_path, encode_once
):
    """Two folders, both episode_index 0, held at each commit and released together: one is
    stored, the other is refused naming both, and no row of the loser remains."""
    import json
    import shutil

    from robodata.errors import EpisodeIndexTakenError
    from robodata.format._provenance import stored_uploads

    uploads = eight_short_uploads  # read only; the rival is a copy
    rival = tmp_path / "uploads" / "rival_0"
    shutil.copytree(uploads[1], rival)
    meta = json.loads((rival / "episode.json").read_text())
    (rival / "episode.json").write_text(json.dumps({**meta, "episode_index": 0}))
    root = str(tmp_path / "ds")
    robodata.ingest_episode(str(uploads[2]), root)  # the dataset exists: both merge into it
    episodes = [read_upload(str(uploads[0])), read_upload(str(rival))]

    def attempt(episode):
        try:
            return robodata.write_episode(episode, root)
        except EpisodeIndexTakenError as exc:
            return exc

    with held_commits(monkeypatch) as gate:
        outcomes = run_together(*[functools.partial(attempt, e) for e in episodes])
    assert gate.held == 4
    refused = [o for o in outcomes if isinstance(o, EpisodeIndexTakenError)]
    assert len(refused) == 1 and {refused[0].episode_id, refused[0].held_by} == {e.episode_id for e in episodes}
    winner = next(e for e in episodes if e.episode_id == refused[0].held_by)
    assert stored_uploads(root)[winner.episode_id].episode_index == 0
    assert refused[0].episode_id not in stored_uploads(root)
    per_episode, extra_rows, _ = _copies(root, None)
    assert per_episode == {0: len(winner), 2: len(read_upload(str(uploads[2])))} and extra_rows == 0
