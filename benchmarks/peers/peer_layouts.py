"""The peers' copies of the benchmark's dataset: LeRobot 0.6.1's own writer from the source
episodes (``lerobot_writer.py`` with the peers' Python) or ``export-lerobot`` of a given dataset,
then ``lerobot-lance-convert`` of that for LanceDB; kept beside cached footage.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from benchmarks.peers.footage import cache_dir
from benchmarks.peers.lerobot_writer import RESULT_PREFIX as WRITTEN_PREFIX
from robodata.lerobot import export_lerobot

WRITER = Path(__file__).with_name("lerobot_writer.py")


def peer_cache(uploads: dict[int, Path]) -> Path | None:
    """Where the peers' copies of cached footage are kept (beside it), or None for footage of
    this run only (synthetic episodes in the work folder)."""
    parent = Path(next(iter(uploads.values()))).parent.resolve()
    try:
        parent.relative_to(cache_dir().resolve())
    except ValueError:
        return None
    return parent.with_name(parent.name + ".peers")


def write_peer_layouts(uploads: dict[int, Path], work: Path, python: Path, log: Path) -> tuple[dict, dict]:
    """The peers' datasets from the source episodes: LeRobot 0.6.1's writer (``lerobot_writer.py``
    with the peers' Python: ``LeRobotDataset.create``, ``add_frame``, ``save_episode``,
    ``finalize``, LeRobot's default encoding), then ``lerobot-lance-convert`` of it. Kept beside
    cached footage (delete ``<footage>.peers`` to write them again)."""
    cache = peer_cache(uploads)
    home = cache or work
    lerobot, lance, record = home / "lerobot", home / "lance", home / "written.json"
    if cache is not None and record.exists():
        written = json.loads(record.read_text())
        return {"robodata": "", "lerobot": str(lerobot), "lance": str(lance)}, {**written, "cached": True}
    partial = home.with_name(home.name + ".partial") if cache is not None else home
    shutil.rmtree(partial / "lerobot", ignore_errors=True)
    shutil.rmtree(partial / "lance", ignore_errors=True)
    partial.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log, "a") as err:
        done = subprocess.run(
            [str(python), str(WRITER), str(partial / "lerobot"), *[str(uploads[k]) for k in sorted(uploads)]],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            check=False,
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith(WRITTEN_PREFIX)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{WRITER.name} failed (exit code {done.returncode}); see {log}")
    written = {"lerobot_writer": time.perf_counter() - start, "writer": json.loads(lines[-1][len(WRITTEN_PREFIX) :])}
    start = time.perf_counter()
    _convert(python, partial / "lerobot", partial / "lance", log)
    written["lerobot_lance_convert"] = time.perf_counter() - start
    (partial / "written.json").write_text(json.dumps(written, indent=2))
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
        partial.rename(cache)
    return {"robodata": "", "lerobot": str(lerobot), "lance": str(lance)}, {**written, "cached": False}


def _convert(python: Path, lerobot: Path, lance: Path, log: Path) -> None:
    convert = python.parent / "lerobot-lance-convert"
    with open(log, "a") as err:
        done = subprocess.run(
            [str(convert), "--root", str(lerobot), "--out", str(lance)],
            stdout=err,
            stderr=err,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"lerobot-lance-convert failed (exit code {done.returncode}); see {log}")


def prepare_peer_layouts(
    uri: str,
    version: int,
    work: Path,
    python: Path,
    episodes_per_file: int,
    log: Path,
    storage_options: dict | None = None,
) -> tuple[dict[str, str], dict[str, float]]:
    """The peers' copies of a given dataset without its source frames (``--dataset``):
    ``export-lerobot --rate camera`` (LeRobot v3.0, AV1 as LeRobot encodes) and
    ``lerobot-lance-convert`` of that export. The benchmark's own footage goes through
    ``write_peer_layouts`` instead."""
    lerobot, lance = work / "lerobot", work / "lance"
    start = time.perf_counter()
    export_lerobot(
        uri,
        lerobot,
        version=version,
        episodes_per_file=episodes_per_file,
        progress=False,
        rate="camera",
        storage_options=storage_options,
    )
    exported = time.perf_counter() - start
    _convert(python, lerobot, lance, log)
    return (
        {"robodata": uri, "lerobot": str(lerobot), "lance": str(lance)},
        {"export_lerobot": exported, "lerobot_lance_convert": time.perf_counter() - start - exported},
    )
