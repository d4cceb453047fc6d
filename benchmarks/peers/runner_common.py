"""What the runner's systems share: the job's frame size, the package versions a result names, and
the DataLoader options lerobot-train passes with the way to stop a loader's persistent workers.

Like every ``runner_*`` module it imports only the standard library at the top, so it runs in
robodata's venv and in the peers' (``peer_runner.py`` says how the runner starts).
"""

from __future__ import annotations

# The DataLoader options lerobot-train 0.6.1 passes by default (its TrainPipelineConfig:
# prefetch_factor 4, persistent_workers True): every LeRobot-facing loader here gets them.
LEROBOT_TRAIN_LOADER = {"prefetch_factor": 4, "persistent_workers": True}


def job_size(job: dict):
    """The size [H, W] a job (or measurement) reads frames at, as a tuple; None at native size."""
    size = job.get("size")
    return None if not size else (int(size[0]), int(size[1]))


def package_version(name: str) -> str:
    """The installed version of a distribution, as a result reports it."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def package_versions(*names: str) -> dict[str, str]:
    """``{name: version}`` of the distributions a system reads through."""
    return {name: package_version(name) for name in names}


def lerobot_train_options(workers: int) -> dict:
    """``LEROBOT_TRAIN_LOADER`` where DataLoader takes it (with workers), as lerobot-train passes it."""
    return dict(LEROBOT_TRAIN_LOADER) if workers else {}


def loader_closer(loader):
    """Stops a loader's persistent workers: DataLoader keeps them on its iterator, which shuts them
    down when it is dropped (DataLoader has no public close)."""
    return lambda: setattr(loader, "_iterator", None)
