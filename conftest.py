"""The package's docstring examples run as tests (``robodata`` is in pyproject's ``testpaths``).

pytest's own ``--doctest-modules`` (in pyproject's ``addopts``) collects every ``>>>`` example;
the hooks below keep it to ``robodata/``'s modules, and each example runs in a fresh temporary
directory that holds
``data/demo`` (a private copy of a small dataset: the three sample episodes, 591 rows) and
``uploads/episode_00000{0,1,2}`` (their upload folders). The examples see ``robodata``, ``np``,
``pa`` and ``ds`` (``data/demo`` opened). An example that writes changes only its own copy.
An example that names ``exports/`` or ``recordings/`` also gets ``exports/demo_lerobot`` (the
LeRobot export of ``data/demo``) and ``recordings/episode_{0,1}.hdf5`` (two short ALOHA HDF5
recordings), made once per session the first time an example asks for them.

A module whose imports (followed through robodata's own modules) reach Dagster or PyTorch gets
the ``dagster`` or ``torch`` marker, like the tests that use them; it is not even imported when
``-m`` leaves that marker out or the package is not installed. Outside the package, only test
files are collected (a helper's docstring example is prose about a fixture, not a test), and a
docstring example in a test file is deselected.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import shutil
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
PACKAGE = ROOT / "robodata"
# marker -> the third-party package whose import (direct or through robodata) gives it
NEEDS = {"dagster": "dagster", "torch": "torch"}


@cache  # each module is parsed once, not once per module whose imports reach it
def _imported_modules(path: Path) -> frozenset[str]:
    """Every absolute module name ``path`` imports, at module level or inside functions."""
    dotted = ".".join(("robodata",) + path.relative_to(PACKAGE).parent.parts)
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = dotted.rsplit(".", node.level - 1)[0] if node.level > 1 else dotted
            module = node.module if not node.level else f"{base}.{node.module}" if node.module else base
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)  # a submodule, maybe
    return frozenset(names)


@cache  # asked again for each module whose imports reach it: thousands of times a collection
def _source_of(module: str) -> Path | None:
    parts = module.split(".")
    if parts[0] != "robodata":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _third_party(path: Path) -> frozenset[str]:
    """Top-level third-party packages ``path`` imports, following robodata's own modules."""
    seen, todo, found = {path}, [path], set()
    while todo:
        for module in _imported_modules(todo.pop()):
            source = _source_of(module)
            if source is None:
                if not module.startswith("robodata"):
                    found.add(module.split(".")[0])
            elif source not in seen:
                seen.add(source)
                todo.append(source)
    return frozenset(found)


def _needs(path: Path) -> set[str]:
    return {marker for marker, package in NEEDS.items() if package in _third_party(path)}


def _in_package(path: Path) -> bool:
    return path.suffix == ".py" and PACKAGE in path.resolve().parents


def _deselected(config: pytest.Config, markers: set[str]) -> bool:
    expression = config.getoption("markexpr", "")
    if not expression:
        return False
    try:  # pytest's own -m parser; if it moves, the module is collected and deselected later
        from _pytest.mark.expression import Expression

        return not Expression.compile(expression).evaluate(lambda name, /, **kwargs: name in markers)
    except Exception:
        return False


def _is_test_file(path: Path, config: pytest.Config) -> bool:
    return any(fnmatch.fnmatch(path.name, pattern) for pattern in config.getini("python_files"))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Which modules ``--doctest-modules`` may import: a package module unless it needs an extra
    that is missing or ``-m`` deselects (the quick loop then never imports Dagster); outside the
    package, test files only."""
    if collection_path.suffix != ".py":
        return None
    if not _in_package(collection_path):
        return None if _is_test_file(collection_path, config) else True
    needs = _needs(collection_path.resolve())
    missing = [marker for marker in needs if importlib.util.find_spec(NEEDS[marker]) is None]
    return True if missing or _deselected(config, needs) else None


@pytest.hookimpl(trylast=True)  # the order is set once the other hooks have marked and deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    outside = []
    for item in items:
        if not isinstance(item, pytest.DoctestItem):
            continue
        if not _in_package(Path(str(item.path))):
            outside.append(item)
            continue
        for marker in sorted(_needs(Path(str(item.path)).resolve())):
            item.add_marker(marker)
    if outside:
        config.hook.pytest_deselected(items=outside)
        items[:] = [item for item in items if item not in outside]
    items[:] = _scheduled_first(items)


def _scheduled_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` file by file (scripts/xdist.args hands xdist whole files in this order, with its
    own reordering off): the files marked ``scheduled_first`` (minutes of waiting on servers and
    runs), then the rest, more tests first, as xdist would order them. A long file started last
    would leave one worker running it alone at the end of the stage."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)

    def first(name: str) -> tuple[bool, int]:
        return files[name][0].get_closest_marker("scheduled_first") is None, -len(files[name])

    return [item for name in sorted(files, key=first) for item in files[name]]


@pytest.fixture(scope="session")
def _doctest_data(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sample uploads and their dataset (the suite's, built once); every example gets a copy.
    Returns (the folder of the uploads, the dataset root)."""
    from robodata_tests.fixtures.built_once import SAMPLE, sample_dataset_once, sample_uploads_once

    uploads = sample_uploads_once(request.config, tmp_path_factory, "sample-uploads", **SAMPLE)
    return uploads[0].parent, sample_dataset_once(request.config, tmp_path_factory, uploads)


@pytest.fixture(scope="session")
def _doctest_sources(
    _doctest_data: tuple[Path, Path], request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The import examples' sources: a LeRobot export of the sample dataset, two ALOHA files."""
    from robodata_tests.fixtures.built_once import built_once

    return built_once(
        request.config, tmp_path_factory, "doctest-sources", lambda root: _write_doctest_sources(_doctest_data[1], root)
    )


def _write_doctest_sources(dataset: Path, root: Path) -> None:
    import h5py
    import numpy as np

    from robodata.lerobot import export_lerobot

    # H.264, not LeRobot's default SVT-AV1: twice, with both test workers exporting at once, SVT-AV1
    # hung in encode or handed the MP4 muxer a bad timestamp (CI, 2026-12-01); the examples read
    # the export, whatever its codec, and the interop tests keep the AV1 path.
    export_lerobot(
        str(dataset),
        root / "exports" / "demo_lerobot",
        progress=False,
        vcodec="libx264",
        preset="veryfast",
    )
    (root / "recordings").mkdir()
    for number in range(2):  # ALOHA's layout: qpos and action per step, RGB frames per camera
        rng = np.random.default_rng(number)
        with h5py.File(root / "recordings" / f"episode_{number}.hdf5", "w") as f:
            f["observations/qpos"] = rng.standard_normal((20, 14))
            f["action"] = rng.standard_normal((20, 14))
            f["observations/images/top"] = rng.integers(0, 255, (20, 48, 64, 3), dtype=np.uint8)


@pytest.fixture(autouse=True)
def _doctest_workspace(request: pytest.FixtureRequest) -> None:
    """For a docstring example: a private copy of the sample data as the working directory."""
    if not isinstance(request.node, pytest.DoctestItem):
        return
    import numpy as np
    import pyarrow as pa

    import robodata

    uploads, dataset = request.getfixturevalue("_doctest_data")
    workspace = request.getfixturevalue("tmp_path")
    shutil.copytree(uploads, workspace / "uploads")
    shutil.copytree(dataset, workspace / "data" / "demo")
    if any(f"{name}/" in (request.node.dtest.docstring or "") for name in ("exports", "recordings")):
        sources = request.getfixturevalue("_doctest_sources")
        for name in ("exports", "recordings"):
            shutil.copytree(sources / name, workspace / name)
    monkeypatch = request.getfixturevalue("monkeypatch")
    for name in ("ROBODATA_UPLOADS", "ROBODATA_ROOT", "ROBODATA_PARTITIONING"):
        monkeypatch.delenv(name, raising=False)
    # an example that points DAGSTER_HOME somewhere (prepare_dagster_home) changes it for itself
    monkeypatch.setenv("DAGSTER_HOME", str(workspace / "dagster_home"))
    monkeypatch.chdir(workspace)
    namespace = request.getfixturevalue("doctest_namespace")
    namespace.update(robodata=robodata, np=np, pa=pa, ds=robodata.open("data/demo"))
