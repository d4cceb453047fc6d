"""Benchmark footage: ALOHA-sim episodes rendered with gym-aloha (realistic: the sim's scene,
lighting and arm motion) where the peers' venv has it, else robodata's synthetic sample scene.

Rendering is slow (~0.6 s a step on 2 idle cores), so rendered episodes are cached on disk under
``$ROBODATA_BENCH_CACHE`` (default ``~/.cache/robodata/bench``) and reused by every later run.

>>> uploads, source = benchmark_uploads(Path("out/work"), peers_python, episodes=3, steps=100)  # doctest: +SKIP
>>> source  # doctest: +SKIP
'gym-aloha'
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from robodata.sample_data import write_sample_uploads

RENDERER = Path(__file__).with_name("aloha_render.py")
OSMESA = {"MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"}


def cache_dir() -> Path:
    return Path(os.environ.get("ROBODATA_BENCH_CACHE", "~/.cache/robodata/bench")).expanduser()


def gym_aloha_available(python: str | os.PathLike | None) -> bool:
    """Whether ``python`` (the peers' venv) imports gym-aloha and renders through OSMesa."""
    if python is None or not Path(python).exists():
        return False
    probe = "import gym_aloha, mujoco; from dm_control import mujoco as m; m.Physics"
    done = subprocess.run(
        [str(python), "-c", probe], capture_output=True, env={**os.environ, **OSMESA}, timeout=300, check=False
    )
    return done.returncode == 0


def aloha_uploads(
    python: str | os.PathLike,
    episodes: int,
    steps: int,
    seed: int = 0,
    cache: Path | None = None,
    log: Path | None = None,
) -> dict[int, Path]:
    """Upload folders of ``episodes`` gym-aloha episodes of ``steps`` steps (rendered once, cached)."""
    folder = (cache or cache_dir()) / f"aloha-{episodes}x{steps}-seed{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    reuse_rendered(folder, episodes, steps, seed)
    command = [
        str(python),
        str(RENDERER),
        str(folder),
        "--episodes",
        str(episodes),
        "--steps",
        str(steps),
        "--seed",
        str(seed),
    ]
    with open(log or os.devnull, "a") as err:
        done = subprocess.run(command, stdout=err, stderr=err, env={**os.environ, **OSMESA}, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{RENDERER.name} failed (exit code {done.returncode}); see {log}")
    uploads = {i: folder / f"episode_{i:06d}" for i in range(episodes)}
    for upload in uploads.values():
        _drop_note(upload / "episode.json")
    return uploads


def _drop_note(path: Path) -> None:
    """Episodes rendered before ingest refused unknown keys carry a ``source_of_footage`` note:
    drop it, so the cached footage stays a valid upload."""
    import json

    meta = json.loads(path.read_text())
    if meta.pop("source_of_footage", None) is not None:
        path.write_text(json.dumps(meta, indent=2))


def reuse_rendered(folder: Path, episodes: int, steps: int, seed: int) -> list[int]:
    """Copy into ``folder`` the episodes another cached footage folder already rendered: an episode
    depends only on its index, the steps and the seed (``aloha_render.render_episode``), so
    ``aloha-3x300-seed0`` is the first half of ``aloha-6x300-seed0``. Returns the indices copied."""
    import shutil

    copied = []
    for index in range(episodes):
        name = f"episode_{index:06d}"
        if (folder / name / "episode.json").exists():
            continue
        for other in sorted(folder.parent.glob(f"aloha-*x{steps}-seed{seed}")):
            source = other / name
            if other != folder and (source / "episode.json").exists():
                shutil.rmtree(folder / name, ignore_errors=True)
                shutil.copytree(source, folder / name)
                copied.append(index)
                break
    return copied


def benchmark_uploads(
    work: Path,
    python: str | os.PathLike | None,
    *,
    source: str = "auto",
    episodes: int = 3,
    steps: int = 100,
    seconds: float = 3.0,
    seed: int = 0,
    log: Path | None = None,
) -> tuple[dict[int, Path], str]:
    """The episodes to benchmark and the name of their source: ``gym-aloha`` (``source`` "aloha",
    or "auto" where the peers' venv has it) or ``synthetic`` (robodata's sample scene)."""
    if source not in ("auto", "aloha", "sample"):
        raise ValueError(f"source must be auto, aloha or sample, got {source!r}")
    if source == "aloha" or (source == "auto" and gym_aloha_available(python)):
        if python is None:
            raise ValueError("the gym-aloha source needs the peers' venv (--peers)")
        return aloha_uploads(python, episodes, steps, seed, log=log), "gym-aloha"
    paths = write_sample_uploads(work / "uploads", episodes, seed=seed, seconds=seconds)
    return dict(enumerate(paths)), "synthetic"
