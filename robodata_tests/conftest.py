"""Shared fixtures: sample uploads made once per session, fresh dataset roots per test."""

from __future__ import annotations

import itertools
import re
import shutil
import types
from pathlib import Path

import pytest

from robodata_tests.fixtures.built_once import SAMPLE, built_once, sample_dataset_once, sample_uploads_once

# Real footage ships inside the repository: no test reads outside it.
TESTDATA = Path(__file__).resolve().parent / "data"
REAL_VIDEO = TESTDATA / "carphone_pristine.mp4"


@pytest.fixture(scope="session")
def sample_uploads(request, tmp_path_factory) -> list[Path]:
    """Three short sample episodes (2 s each) in the upload format. Treat as read-only."""
    return sample_uploads_once(request.config, tmp_path_factory, "sample-uploads", **SAMPLE)


@pytest.fixture
def uploads(sample_uploads, tmp_path) -> list[Path]:
    """A private, writable copy of the sample uploads."""
    copies = []
    for upload in sample_uploads:
        target = tmp_path / "uploads" / upload.name
        shutil.copytree(upload, target)
        copies.append(target)
    return copies


@pytest.fixture(scope="session")
def ingested(sample_uploads, request, tmp_path_factory) -> str:
    """A dataset holding the three sample episodes. Treat as read-only."""
    return str(sample_dataset_once(request.config, tmp_path_factory, sample_uploads))


@pytest.fixture
def dataset_copy(ingested, tmp_path) -> str:
    """A private, writable copy of the ingested dataset."""
    target = tmp_path / "ds"
    shutil.copytree(ingested, target)
    return str(target)


@pytest.fixture(scope="session")
def exported(ingested, request, tmp_path_factory) -> str:
    """The sample dataset (3 episodes) as LeRobot v3, 2 episodes per file, made once: AV1
    encoding is the slow part of the LeRobot and import tests. Treat as read-only."""
    from robodata.lerobot import export_lerobot

    def export(folder: Path) -> None:
        export_lerobot(ingested, folder / "sample_lerobot", episodes_per_file=2, progress=False)

    return str(built_once(request.config, tmp_path_factory, "sample-lerobot", export) / "sample_lerobot")


@pytest.fixture(scope="session")
def short_dataset(eight_short_uploads, request, tmp_path_factory) -> str:
    """Three half-second episodes (0-2) ingested: for tests that run training or export. Read-only."""
    import robodata

    def ingest(folder: Path) -> None:
        for upload in eight_short_uploads[:3]:
            robodata.ingest_episode(str(upload), str(folder / "ds"))

    return str(built_once(request.config, tmp_path_factory, "short-dataset", ingest) / "ds")


@pytest.fixture(scope="session")
def built_wheel(request, tmp_path_factory) -> Path:
    """robodata's wheel, built from this checkout once (fixtures/wheel.py). Read-only."""
    from robodata_tests.fixtures.wheel import wheel_once

    return wheel_once(request.config, tmp_path_factory)


pytest_plugins = ["robodata_tests.fixtures.s3_server"]


@pytest.fixture(scope="session")
def eight_short_uploads(request, tmp_path_factory) -> list[Path]:
    """Eight half-second sample episodes (indices 0-7): cheap enough for many ingests. Read-only."""
    return sample_uploads_once(request.config, tmp_path_factory, "eight-uploads", episodes=8, seed=11, seconds=0.5)


# --- markers (registered in pyproject.toml) -------------------------------------------------
# The quick loop is `pytest -m "not slow and not s3 and not dagster"`. `s3`, `dagster` and
# `torch` are given here from what a test uses, so a new test is marked without anyone
# remembering to; `slow` is marked by hand on tests that take seconds for other reasons.


def _uses(module: types.ModuleType, package: str) -> bool:
    """Whether ``module`` imported ``package`` (or something from it) at module level."""
    for value in vars(module).values():
        name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if isinstance(name, str) and (name == package or name.startswith(package + ".")):
            return True
    return False


MARKERS = ("slow", "s3", "dagster", "torch")
# Folders whose every test runs Dagster (their conftest imports it), so -m "not dagster" skips them whole.
DAGSTER_FOLDERS = ("orchestration",)


def _file_markers(path: Path) -> set[str]:
    """Markers every test in a file gets from the file's place and name alone."""
    try:
        relative = Path(path).resolve().relative_to(Path(__file__).parent)
    except ValueError:  # a file outside the suite
        return set()
    words = relative.stem.split("_")
    found = {"s3"} if "s3" in words else set()
    if relative.parts[0] in DAGSTER_FOLDERS or "defs" in words:
        found.add("dagster")
    return found


def _markers(item: pytest.Item) -> set[str]:
    module = getattr(item, "module", None)
    found = _file_markers(Path(str(item.path)))
    if {"s3", "s3_root", "private_s3", "module_s3"} & set(item.fixturenames):
        found.add("s3")
    if module and (_uses(module, "dagster") or _uses(module, "robodata.orchestration")):
        found.add("dagster")
    callspec = getattr(item, "callspec", None)  # e.g. test_doctests' module names
    if callspec and any(
        isinstance(v, str) and v.startswith("robodata.orchestration") for v in callspec.params.values()
    ):
        found.add("dagster")
    if module and (_uses(module, "torch") or _uses(module, "robodata.torch._torch_dataset")):
        found.add("torch")
    return found


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Skip importing a test file (or a folder, conftest included) that ``-m`` deselects whatever
    else its tests are marked with: the quick loop then never imports Dagster."""
    expression = config.getoption("markexpr", "")
    if not expression:
        return None
    try:  # pytest's own -m parser; if it moves, files are simply collected and deselected
        from _pytest.mark.expression import Expression

        compiled = Expression.compile(expression)
    except Exception:
        return None
    names = set(MARKERS) | set(re.findall(r"[A-Za-z_]\w*", expression)) - {"and", "or", "not"}
    if collection_path.is_dir():
        files = list(collection_path.rglob("test_*.py"))
        return True if files and all(_deselected(f, compiled, names) for f in files) else None
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return True if _deselected(collection_path, compiled, names) else None
    return None


def _deselected(path: Path, compiled, names: set[str]) -> bool:
    """Whether the -m expression rejects every test of ``path`` whatever markers it adds to the
    ones the file's place and name give."""
    fixed = _file_markers(path)
    free = sorted(names - fixed)
    for count in range(len(free) + 1):
        for extra in itertools.combinations(free, count):
            marks = fixed | set(extra)
            if compiled.evaluate(lambda name, /, **kwargs: name in marks):  # noqa: B023 - used at once
                return False
    return True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for name in sorted(_markers(item) - {m.name for m in item.iter_markers()}):
            item.add_marker(name)
    # Tests against real LeRobot run only where asked for (-m lerobot, in a venv with LeRobot,
    # Python >= 3.12); elsewhere they are deselected, never silently passed or skipped.
    if "lerobot" not in config.getoption("markexpr", ""):
        lerobot = [item for item in items if item.get_closest_marker("lerobot")]
        if lerobot:
            config.hook.pytest_deselected(items=lerobot)
            items[:] = [item for item in items if not item.get_closest_marker("lerobot")]
