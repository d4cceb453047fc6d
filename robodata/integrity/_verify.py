"""Verify a stored dataset end to end: every GOP row's columns and bytes against their checksums
(the bytes read as training reads them: through Lance's ``read_blobs`` and, on a local disk, in
place; optionally decoded frame by frame), and every row's references against gops.lance. What
``robodata verify`` runs and what the Dagster episode checks run for one episode.

>>> report = verify_dataset("data/demo", decode=True)
>>> report.ok, report.gops.checked
(True, 135)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from robodata.errors import NotFoundError
from robodata.format._ids import episode_filter
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.integrity._episode_checks import RowRefs, references_result
from robodata.integrity._frames_checksums import check_frames_files
from robodata.integrity._gop_checks import GopCheck, check_gop_rows, gop_rows
from robodata.integrity._leftovers import find_leftovers
from robodata.storage._failures import storage_step


@dataclass
class VerifyReport:
    """What ``verify_dataset`` checked and every problem it found (empty: the dataset is sound)."""

    uri: str
    version: int
    episodes: int
    rows: int
    gops: GopCheck
    decode: bool
    problems: list[str] = field(default_factory=list)
    # Leftovers no reader sees (orphaned GOPs, stale leases, unlisted data files): reported, and
    # removed by ``robodata gc``; they do not make the dataset unsound.
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """A few lines for a person: what was checked, then each problem."""
        decoded = f", {self.gops.decoded} decoded frame by frame" if self.decode else ""
        lines = [
            f"{self.uri} version {self.version}: {self.episodes} episodes, {self.rows} rows; "
            f"{self.gops.checked} GOPs checksummed{decoded}",
            f"{len(self.problems)} problem(s)" if self.problems else "OK: every GOP and every row reference holds",
        ]
        shown = self.problems[:50]
        lines += [f"  - {problem}" for problem in shown]
        if len(self.problems) > len(shown):
            lines.append(f"  ... and {len(self.problems) - len(shown)} more")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def verify_dataset(
    uri: str,
    *,
    version: int | str | None = None,
    decode: bool = False,
    storage_options: dict | None = None,
    episode_index: int | None = None,
    leftovers_min_age: timedelta = timedelta(hours=1),
) -> VerifyReport:
    """Check every GOP stored in gops.lance (its checksum; with ``decode`` also every frame, the
    frame count and size) and that every row of frames.lance at ``version`` points at a stored
    GOP of its own episode and camera holding its frame. ``episode_index`` narrows both to one
    episode. On the whole dataset's newest version it also looks for leftovers at least ``leftovers_min_age`` old
    (``robodata.integrity._leftovers``): GOPs stored twice are a problem, the others notes.

    >>> robodata.open("data/demo").tag("run-42")  # or any version, on an s3:// root alike
    3
    >>> print(verify_dataset("data/demo", version="run-42", episode_index=1).summary())
    data/demo version 3: 1 episodes, 197 rows; 45 GOPs checksummed
    OK: every GOP and every row reference holds
    """
    with storage_step("verifying the dataset", frames_uri(uri), storage_options):
        frames = open_table(frames_uri(uri), storage_options, version)
        if frames is None:
            raise NotFoundError(f"no robodata dataset at {uri} (frames.lance does not exist)")
        # Row data first: rows are read below only from files that match their checksums.
        rows_check = check_frames_files(uri, frames, storage_options)
        gops = open_table(gops_uri(uri), storage_options)
        where = None if episode_index is None else episode_filter(episode_index)
        refs = None if rows_check.problems else RowRefs.of_table(uri, frames, where, storage_options)
        check = (
            GopCheck() if gops is None else check_gop_rows(gops, gop_rows(gops, where), decode=decode, in_place=True)
        )
    label = f"version {frames.version}" if episode_index is None else f"episode {episode_index}"
    problems = list(rows_check.problems) + list(check.problems)
    if refs is not None:
        references = references_result(refs, label)
        if not references.passed:
            problems.append(references.description)
    notes: list[str] = check.notes()
    if rows_check.unrecorded:
        notes.append(
            f"frames.lance: {len(rows_check.unrecorded)} data files have no recorded checksum (a writer stopped "
            "after its commit); the next write to the dataset records them"
        )
    if episode_index is None and version is None and refs is not None:
        with storage_step("looking for leftovers", uri, storage_options):
            found = find_leftovers(uri, storage_options, min_age=leftovers_min_age)
        lines = found.describe()
        problems += lines[:1] if found.duplicate_ref_ids else []
        notes += lines[1:] if found.duplicate_ref_ids else lines
    return VerifyReport(
        uri=uri,
        version=frames.version,
        episodes=0 if refs is None else len(set(refs.episode.tolist())),
        rows=0 if refs is None else refs.rows,
        gops=check,
        decode=decode,
        problems=problems,
        notes=notes,
    )
