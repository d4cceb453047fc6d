"""Write, audit, publish: an episode's checks run on its staged GOPs and its rows before the rows
commit to frames.lance. A failing check raises EpisodeAuditError and nothing is committed, so
the dataset's version does not move.

>>> from robodata.ingest._upload import read_upload
>>> from robodata.ingest._writer import write_gops
>>> staged = write_gops(read_upload("uploads/episode_000000"), "data/demo")
>>> rows = ds.to_table(filter="episode_index = 0")
>>> checks = audit_staged_episode("data/demo", rows, ds.metadata, staged, expected_rows=197)
>>> {name: result.passed for name, result in checks.items()}
{'staged_gops_decode': True, 'references_resolve': True, 'alignment_within_half_period': True, 'row_count_matches_upload': True}
>>> audit_staged_episode("data/demo", rows, ds.metadata, staged, expected_rows=200)
Traceback (most recent call last):
robodata.errors.EpisodeAuditError: ...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from robodata.errors import EpisodeAuditError
from robodata.format._ids import episode_filter
from robodata.format._schema import DatasetMetadata
from robodata.format._tables import gops_uri, open_table
from robodata.integrity._episode_checks import (
    IntegrityResult,
    RowRefs,
    alignment_result,
    references_result,
    row_count_result,
)
from robodata.integrity._gop_checks import check_gop_rows, gop_rows
from robodata.storage._failures import storage_step


class StagedCamera(Protocol):
    """One camera's staged GOPs, in GOP order (``robodata.ingest._camera_encoding.CameraGops``)."""

    @property
    def ref_ids(self) -> Sequence[int]: ...

    @property
    def n_frames(self) -> Sequence[int]: ...


class StagedEpisode(Protocol):
    """What the audit needs of an episode's staged GOPs (``robodata.ingest._writer.StagedGops``):
    described here, not imported, because ingest builds on this room."""

    @property
    def episode_index(self) -> int: ...

    @property
    def cameras(self) -> Mapping[str, StagedCamera]: ...


# The names the Dagster UI shows for each audit check (also the episode's asset checks).
AUDIT_CHECKS = ("staged_gops_decode", "references_resolve", "alignment_within_half_period", "row_count_matches_upload")


def audit_staged_episode(
    dataset_uri: str,
    rows: pa.Table,
    meta: DatasetMetadata,
    staged: StagedEpisode,
    *,
    expected_rows: int,
    storage_options: dict | None = None,
) -> dict[str, IntegrityResult]:
    """Check an episode before its ``rows`` commit: every staged GOP is stored, matches its
    checksum and decodes to its recorded frame count and size; every row points at a staged GOP
    holding its frame, within one camera period (half a period plus jitter); the episode has ``expected_rows`` rows.
    Returns each check's result; raises EpisodeAuditError naming every failure.
    """
    label = f"episode {staged.episode_index}"
    with storage_step(f"auditing {label}'s staged GOPs", gops_uri(dataset_uri), storage_options):
        refs = RowRefs.of_rows(dataset_uri, rows, meta, storage_options)
        results = {
            "staged_gops_decode": _staged_gops_decode(dataset_uri, staged, storage_options),
            "references_resolve": references_result(refs, label),
            "alignment_within_half_period": alignment_result(refs, label),
            "row_count_matches_upload": row_count_result(rows.num_rows, expected_rows, label),
        }
    failed = [f"{name}: {result.description}" for name, result in results.items() if not result.passed]
    if failed:
        raise EpisodeAuditError(
            f"{label} was not committed (the dataset's version is unchanged); its checks failed: " + " | ".join(failed),
            results,
        )
    return results


def _staged_gops_decode(dataset_uri: str, staged: StagedEpisode, storage_options: dict | None) -> IntegrityResult:
    wanted = np.unique(np.asarray([r for c in staged.cameras.values() for r in c.ref_ids], dtype=np.int64))
    gops = open_table(gops_uri(dataset_uri), storage_options)
    if gops is None:
        return IntegrityResult(False, "gops.lance does not exist", {"gops": len(wanted)})
    stored = gop_rows(gops, episode_filter(staged.episode_index))
    stored = stored.filter(pc.is_in(stored["ref_id"], pa.array(wanted)))
    problems = []
    missing = len(wanted) - len(np.unique(stored["ref_id"].to_numpy()))
    if missing:
        problems.append(f"{missing} staged GOPs are not in gops.lance")
    problems += _layout_problems(stored, staged)
    check = check_gop_rows(gops, stored, decode=True)
    problems += check.problems
    details = {"gops": len(wanted), "decoded": check.decoded}
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        return IntegrityResult(False, f"{len(problems)} problem(s) with the staged GOPs: {shown}", details)
    return IntegrityResult(True, f"all {check.decoded} staged GOPs decode to their recorded frames", details)


def _layout_problems(stored: pa.Table, staged: StagedEpisode) -> list[str]:
    """Frame counts the staged layout recorded that differ from the stored GOP rows'."""
    n_frames = dict(zip(stored["ref_id"].to_pylist(), stored["n_frames"].to_pylist(), strict=True))
    problems = []
    for camera, layout in sorted(staged.cameras.items()):
        for gop_index, (ref, count) in enumerate(zip(layout.ref_ids, layout.n_frames, strict=True)):
            if ref in n_frames and n_frames[ref] != count:
                problems.append(
                    f"camera {camera!r} GOP {gop_index} was staged with {count} frames, "
                    f"gops.lance holds {n_frames[ref]}"
                )
    return problems
