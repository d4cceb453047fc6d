"""Dependencies as a library ships them: compatible ranges in pyproject.toml (room for LeRobot
0.6.1's av<16, fsspec<=2026.2.0 and torch<2.12), extras for what the core does not need, and
every requirement pinned exactly in constraints.txt for CI."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def name_of(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def pins() -> dict[str, str]:
    found = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            found[name_of(name)] = version
    return found


def test_core_is_ranges_without_the_extras():
    core = PROJECT["dependencies"]
    assert not [r for r in core if "==" in r], "the core pins no exact version"
    names = {name_of(r) for r in core}
    assert {"pylance", "pyarrow", "numpy", "av", "fsspec", "s3fs", "xxhash"} <= names
    assert not names & {"dagster", "dagster-webserver", "torch", "matplotlib", "h5py", "pandas"}


def test_extras():
    extras = {name: {name_of(r) for r in reqs} for name, reqs in PROJECT["optional-dependencies"].items()}
    assert {"dagster", "dagster-webserver", "dagster-postgres", "dagster-celery"} <= extras["dagster"]
    assert extras["torch"] == {"torch", "pandas"}  # pandas: LeRobotCompatDataset.meta.tasks
    assert extras["interop"] >= {"h5py"} and extras["plots"] == {"matplotlib"}
    assert {"pytest", "pre-commit", "mypy", "ruff"} <= extras["test"]
    every = [r for reqs in PROJECT["optional-dependencies"].values() for r in reqs] + PROJECT["dependencies"]
    assert not [r for r in every if "==" in r]


def test_ranges_leave_room_for_lerobot_0_6_1():
    """LeRobot 0.6.1 resolves av 15.1, fsspec/s3fs 2026.2.0 and torch 2.11 (scripts/coinstall_lerobot.sh)."""
    requirements = [Requirement(r) for r in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["torch"]]
    for name, version in {"av": "15.1.0", "fsspec": "2026.2.0", "s3fs": "2026.2.0", "torch": "2.11.0"}.items():
        (requirement,) = [r for r in requirements if r.name == name]
        assert requirement.specifier.contains(version), f"{requirement} refuses {name} {version}"


def requirements() -> list[Requirement]:
    """Every requirement in pyproject.toml, the core's and each extra's (robodata's own extras left out)."""
    extras = [r for reqs in PROJECT["optional-dependencies"].values() for r in reqs]
    return [Requirement(r) for r in PROJECT["dependencies"] + extras if name_of(r) != "robodata"]


def test_constraints_pin_every_requirement_within_its_range():
    pinned = pins()
    assert not {name_of(r.name) for r in requirements()} - set(pinned), "pin these in constraints.txt"
    outside = [
        f"{r} refuses {pinned[name_of(r.name)]}" for r in requirements() if pinned[name_of(r.name)] not in r.specifier
    ]
    assert outside == [], "constraints.txt pins a version pyproject.toml's range refuses"
    # the cluster libraries are built for one dagster release each: 0.29.N goes with 1.13.N
    dagster_release = pinned["dagster"].split(".")[-1]
    assert pinned["dagster-postgres"].split(".")[-1] == pinned["dagster-celery"].split(".")[-1] == dagster_release


def test_the_suite_runs_on_the_pinned_versions():
    """The environment is the one constraints.txt describes: the core is installed, and every
    installed package constraints.txt pins is at its pin (a local build such as torch's
    ``+cpu`` wheel matches its version)."""

    def installed(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    assert [r for r in PROJECT["dependencies"] if installed(Requirement(r).name) is None] == []
    found = {name: installed(name) for name in pins()}
    off = {
        name: found[name]
        for name, version in pins().items()
        if found[name] is not None and not SpecifierSet(f"=={version}").contains(found[name], prereleases=True)
    }
    assert off == {}, "installed versions that differ from constraints.txt"
