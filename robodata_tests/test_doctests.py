"""Docstring examples: pytest collects every ``>>>`` example in the package (``robodata`` is in
pyproject's testpaths; the root conftest.py collects them and gives each a copy of a small
dataset). These tests check that the mechanism is on, and that the public entry points carry
numpy-style sections and examples that run (none skipped)."""

from __future__ import annotations

import doctest
import importlib
import inspect
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import robodata

ROOT = Path(__file__).resolve().parents[1]

# The entry points a user meets first: robodata's functions, RoboDataset's public methods, the
# training loader's (module, name); the torch ones are checked where torch is installed.
ENTRY_POINTS = [
    ("robodata", "open"),
    ("robodata", "ingest_episode"),
    ("robodata", "write_episode"),
    ("robodata", "add_annotations"),
    ("robodata", "delete_episodes"),
    ("robodata", "collect_garbage"),
    ("robodata", "RoboDataset.get_frames"),
    ("robodata", "RoboDataset.get_windows"),
    ("robodata", "RoboDataset.episodes"),
    ("robodata", "RoboDataset.to_table"),
    ("robodata", "RoboDataset.versions"),
    ("robodata", "RoboDataset.tag"),
    ("robodata", "RoboDataset.checkout"),
    ("robodata.torch._torch_dataset", "RoboTorchDataset"),
    ("robodata.torch._torch_dataset", "make_dataloader"),
    ("robodata.torch._delta_timestamps", "resolve_delta_timestamps"),
]


def test_pytest_config_runs_the_package_examples():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "robodata" in config["testpaths"]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "robodata/reader/_dataset.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "robodata/reader/_dataset.py::robodata.reader._dataset.RoboDataset.get_frames" in run.stdout.splitlines()


@pytest.mark.parametrize(("module", "name"), ENTRY_POINTS, ids=[name for _, name in ENTRY_POINTS])
def test_entry_points_document_parameters_returns_and_a_running_example(module, name):
    if module.startswith("robodata.torch.torch"):
        pytest.importorskip("torch")
    entry = importlib.import_module(module)
    for part in name.split("."):
        entry = getattr(entry, part)
    text = inspect.getdoc(entry) or ""
    signature = inspect.signature(entry.__init__ if inspect.isclass(entry) else entry)
    wanted = ["Examples\n--------"]
    if [p for p in signature.parameters if p != "self"]:
        wanted.append("Parameters\n----------")
    if not inspect.isclass(entry):
        wanted.append("Returns\n-------")
    sections = [s for s in wanted if s not in text]
    assert sections == [], f"{entry.__qualname__}: docstring lacks {sections}"
    examples = doctest.DocTestParser().get_examples(text)
    assert examples, f"{entry.__qualname__} has no example"
    skipped = [e.source for e in examples if e.options.get(doctest.SKIP)]
    assert skipped == [], f"{entry.__qualname__}: skipped examples {skipped}"


def test_robodata_exports_the_errors_a_user_catches_and_robodata_errors_has_them_all():
    """The top level is thin (its docstring says why each one is there); every error is in
    robodata.errors, a RoboDataError."""
    from robodata import errors as module

    errors = {
        name: value
        for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, Exception) and not issubclass(value, Warning)
    }
    exported = {name for name in robodata.__all__ if name in errors}
    assert exported == {
        "RoboDataError",
        "BadUploadError",
        "IncompatibleEpisodeError",
        "NotFoundError",
        "StorageError",
        "CorruptGopError",
        "CommitConflictError",
        "UnsupportedFormatError",
    }
    assert all(getattr(robodata, name) is errors[name] for name in exported)
    assert all(issubclass(error, module.RoboDataError) for error in errors.values())
    assert {"StorageUnreachableError", "EpisodeNotFoundError", "MissingExtraError"} <= set(errors)
    assert not hasattr(robodata, "StorageUnreachableError")
    for name in exported:
        assert f"``{name}``" in robodata.__doc__, f"robodata's docstring does not say why {name} is exported"


def test_no_example_in_the_package_is_skipped():
    # an example that cannot run (a real remote bucket) is prose or a plain code block instead
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "robodata").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "doctest:" in line and "+SKIP" in line
    ]
    assert found == [], f"{len(found)} skipped examples: {found}"
