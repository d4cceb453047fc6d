"""The table-driven bad-input tests' shared machinery (``test_bad_*.py`` in this folder): a case,
the upload damages several tables use, and the check every case gets. Each bad upload (or bad
argument) raises an error that names the file and the problem; the dataset's version, row count
and GOPs stay as they were; the episodes already stored still decode to the same frames.

Every case runs twice: through the Python API (the error class and message) and through the
``robodata`` command line (exit code 2 and the same message as one line on stderr, no
traceback). Every upload case starts from a copy of sample episode 1, which the dataset already
holds, so a failed re-ingest that damaged the stored copy would show. The frames the stored
episodes decode to before any bad input arrived are the ``stored_frames`` fixture (conftest.py)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import robodata
from robodata.cli import main
from robodata.errors import BadUploadError
from robodata.format._tables import gops_uri, open_table


class CliFailed(Exception):
    """What the command line did with a case: its exit code and what it printed on stderr."""

    def __init__(self, code: int, stderr: str) -> None:
        self.code, self.stderr = code, stderr
        super().__init__(stderr)


@dataclass
class Context:
    dataset: str
    uploads_root: Path  # the uploads folder the ingest is told about
    upload: Path  # a fresh copy of sample episode 1 inside it, ready to be damaged
    cli: Callable[[list[str]], object] | None = None  # set: run the case through ``robodata ...``


@dataclass
class Case:
    id: str
    run: Callable[[Context], object]  # must raise
    error: type[Exception]
    message: tuple[str, ...]  # all must appear in the error message
    # False: the case needs an API argument the CLI does not have (--uploads-root), or a value
    # argparse itself refuses before robodata runs.
    via_cli: bool = True


def refused(
    id: str, damage: Callable[[Path], object], *message: str, error: type[Exception] = BadUploadError, via_cli=True
) -> Case:
    """The tables' usual row: damage the upload copy, then ingest it; ``error`` with ``message``."""
    return Case(id, ingest_after(damage), error, message, via_cli)


def refusal_test(cases: list[Case]) -> Callable[..., None]:
    """The test of a table file (``test_bad_input = refusal_test(CASES)``): each case through the
    API and through the command line, checked by ``check_refused``."""

    @pytest.mark.parametrize("via", ["api", "cli"])
    @pytest.mark.parametrize("case", cases, ids=[case.id for case in cases])
    def test_bad_input(case: Case, via: str, sample_uploads, dataset_copy, stored_frames, tmp_path, capsys) -> None:
        check_refused(case, via, sample_uploads, dataset_copy, stored_frames, tmp_path, capsys)

    return test_bad_input


# --- running a case --------------------------------------------------------------------------
def ingest(ctx: Context, upload: Path | str, uploads_root: bool = True):
    """Ingest ``upload`` as the Dagster asset would (told the uploads root), or as
    ``robodata ingest UPLOAD DATASET`` when the case runs through the command line."""
    if ctx.cli is not None:
        return ctx.cli(["ingest", str(upload), ctx.dataset])
    root = str(ctx.uploads_root) if uploads_root else None
    return robodata.ingest_episode(str(upload), ctx.dataset, uploads_root=root)


def run_cli(capsys) -> Callable[[list[str]], object]:
    """``robodata ARGS...`` in this process; raises CliFailed with the exit code and stderr."""

    def run(argv: list[str]):
        capsys.readouterr()
        code = main(argv)
        raise CliFailed(code, capsys.readouterr().err)

    return run


def check_refused(case: Case, via: str, sample_uploads, dataset_copy, stored_frames, tmp_path, capsys) -> None:
    """Run ``case`` through the API or the CLI (``via``): it must fail with its error and message,
    leaving the dataset, its GOPs and the stored episodes' frames as they were."""
    if via == "cli" and not case.via_cli:
        return  # the command line cannot express the case; the API row covers it
    uploads_root = tmp_path / "uploads"
    upload = uploads_root / sample_uploads[1].name
    shutil.copytree(sample_uploads[1], upload)
    before = robodata.open(dataset_copy)
    gops_before = open_table(gops_uri(dataset_copy)).version
    cli = run_cli(capsys) if via == "cli" else None

    with pytest.raises(CliFailed if cli else case.error) as raised:
        case.run(Context(dataset_copy, uploads_root, upload, cli))

    message = str(raised.value)
    if cli:
        assert raised.value.code == 2 and "Traceback" not in message
        lines = [line for line in message.splitlines() if line.startswith("robodata ")]
        assert len(lines) == 1, message  # one line, whatever progress bars printed
        message = lines[0]
    for part in case.message:
        assert part in message, f"{part!r} not in {message!r}"
    after = robodata.open(dataset_copy)
    assert (after.version, len(after)) == (before.version, len(before))
    assert after.episodes().equals(before.episodes())
    assert open_table(gops_uri(dataset_copy)).version == gops_before
    rows, frames = stored_frames
    for camera, expected in after.get_frames(rows).data.items():
        np.testing.assert_array_equal(expected, frames[camera])


# --- damaging an upload ----------------------------------------------------------------------
def ingest_after(damage: Callable[[Path], object], folder: str | None = None):
    """A case body: damage the upload copy, then ingest it."""

    def run(ctx: Context):
        upload = ctx.upload
        if folder is not None:
            upload = upload.rename(ctx.uploads_root / folder)
        damage(upload)
        return ingest(ctx, upload)

    return run


def edit_json(change: Callable[[dict], object]):
    def damage(upload: Path) -> None:
        meta = json.loads((upload / "episode.json").read_text())
        change(meta)
        (upload / "episode.json").write_text(json.dumps(meta))

    return damage


def edit_states(change: Callable[[dict], object]):
    def damage(upload: Path) -> None:
        columns = pq.read_table(upload / "states.parquet").to_pydict()
        change(columns)
        pq.write_table(pa.table(columns), upload / "states.parquet")

    return damage


def write_text(name: str, text: str):
    return lambda upload: (upload / name).write_text(text)


def remove(name: str):
    return lambda upload: (upload / name).unlink()
