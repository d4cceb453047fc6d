"""Every third-party package robodata imports is declared in the wheel's metadata, in the core or
in the extra of the layer that imports it, with an upper bound; and the wheel ships ``py.typed``.

The imports are read with ``ast`` from every module of the package (imports inside functions
count, as do ``import_extra("module", "extra", ...)`` calls), each top-level module is mapped to
its distribution with ``importlib.metadata.packages_distributions()``, and the requirements are
those of a wheel built from this checkout's pyproject.toml by the build backend (setuptools), so
the test reads what ``pip install robodata`` would get, not the environment's installed copy.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import zipfile
from email.parser import Parser
from functools import cache
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "robodata"

# Where a module lives under robodata/ (a path prefix, "/" separated; the longest prefix that
# matches wins) -> the extras whose requirements its imports may come from, besides the core.
# A module no prefix matches is core. When modules move, add their new folder here.
LAYER_EXTRAS: dict[str, tuple[str, ...]] = {
    # Orchestration: the Dagster definitions, the instance helpers, the cluster, the demo.
    "orchestration/": ("dagster",),
    "defs/": ("dagster",),
    "dagster_home/": ("dagster",),
    "cluster/": ("dagster",),
    "definitions.py": ("dagster",),
    "demo.py": ("dagster",),
    # PyTorch loaders; NVDEC decode is the gpu extra's.
    "torch/": ("torch", "gpu"),
    # LeRobot: the compat dataset and the training entry point need torch; the v3 export asks
    # for the interop extra's pandas through import_extra, which names its extra itself.
    "lerobot/": ("torch",),
    "interop/": ("interop",),
    "view/": ("plots",),
}

# Modules robodata imports that it does not install, and why.
NOT_INSTALLED_BY_ROBODATA = {
    "benchmarks": "the source checkout's top-level benchmarks/ (first party, outside the wheel), "
    "imported after require_benchmarks",
    "lerobot": "LeRobot (Python >= 3.12, its own pins) is installed beside robodata; robodata-train "
    "says so when it is missing",
    "datasets": "Hugging Face datasets, LeRobot's: meta.episodes falls back to its own table without it",
}

# Modules the test environment may lack (so packages_distributions() cannot name them): their
# distributions. torchcodec is the gpu extra's, not installed on the CPU-only CI machine.
DISTRIBUTION_OF_UNINSTALLED = {"torchcodec": "torchcodec"}


def layer_extras(relative: str, table: dict[str, tuple[str, ...]] = LAYER_EXTRAS) -> tuple[str, ...]:
    """The extras a module at ``relative`` (under the package, "/" separated) may draw on."""
    matches = [prefix for prefix in table if relative.startswith(prefix)]
    return table[max(matches, key=len)] if matches else ()


def imported_modules(package: Path):
    """(module path relative to ``package``, line, top-level module, extra named or None) for
    every absolute import in ``package``, at any depth, and every ``import_extra`` call."""
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield relative, node.lineno, alias.name.split(".")[0], None
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield relative, node.lineno, node.module.split(".")[0], None
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "import_extra"
                and len(node.args) >= 2
                and all(isinstance(arg, ast.Constant) and isinstance(arg.value, str) for arg in node.args[:2])
            ):
                yield relative, node.lineno, node.args[0].value.split(".")[0], node.args[1].value


@cache
def _installed() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distributions_of(module: str) -> set[str]:
    """The canonical names of the distributions that install top-level ``module``; empty if none known."""
    names = _installed().get(module, [])
    if module in DISTRIBUTION_OF_UNINSTALLED:
        names = [*names, DISTRIBUTION_OF_UNINSTALLED[module]]
    return {canonicalize_name(name) for name in names}


def requirements_by_extra(requires_dist: list[str], extras: list[str], project: str = "robodata") -> dict:
    """{"": the core's requirements, extra: the requirements installing the extra adds, by
    canonical name}, from METADATA's Requires-Dist lines (``robodata[plots]`` in an extra
    brings the plots extra's requirements)."""
    parsed = [Requirement(line) for line in requires_dist]

    def direct(extra: str) -> list[Requirement]:
        return [
            r for r in parsed if (r.marker is None if not extra else r.marker and r.marker.evaluate({"extra": extra}))
        ]

    def closure(extra: str, seen: frozenset = frozenset()) -> dict[str, Requirement]:
        found = {}
        for requirement in direct(extra):
            if canonicalize_name(requirement.name) == project:
                for inner in set(requirement.extras) - seen:
                    found |= closure(inner, seen | {extra, inner})
            else:
                found[canonicalize_name(requirement.name)] = requirement
        return found

    return {extra: closure(extra) for extra in ["", *extras]}


def undeclared_imports(
    package: Path, declared: dict[str, dict], table: dict[str, tuple[str, ...]] = LAYER_EXTRAS
) -> list[str]:
    """One line per import in ``package`` whose distribution the core and the importing layer's
    extras (or, for ``import_extra``, the extra it names) do not declare."""
    first_party = {package.name} | set(NOT_INSTALLED_BY_ROBODATA)
    problems = []
    for relative, line, module, named_extra in imported_modules(package):
        if module in sys.stdlib_module_names or module in first_party:
            continue
        distributions = distributions_of(module)
        where = f"{relative}:{line} imports {module}"
        if not distributions:
            problems.append(
                f"{where}, which no installed distribution provides (name it in DISTRIBUTION_OF_UNINSTALLED)"
            )
            continue
        extras = ("",) + ((named_extra,) if named_extra else layer_extras(relative, table))
        if not any(distributions & set(declared.get(extra, {})) for extra in extras):
            allowed = " or ".join(f"extra {e!r}" if e else "the core" for e in extras)
            problems.append(f"{where} ({', '.join(sorted(distributions))}): declare it in {allowed}")
    return problems


def unbounded(requirements: list[Requirement]) -> list[str]:
    """The requirements that let any future release in (no <, <=, ~= or == specifier)."""
    return [str(r) for r in requirements if not any(s.operator in {"<", "<=", "~=", "=="} for s in r.specifier)]


@pytest.fixture(scope="module")
def wheel(built_wheel) -> zipfile.ZipFile:
    """The wheel the build backend makes from this checkout."""
    with zipfile.ZipFile(built_wheel) as archive:
        yield archive


@pytest.fixture(scope="module")
def metadata(wheel):
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return Parser().parsestr(wheel.read(name).decode())


@pytest.fixture(scope="module")
def declared(metadata) -> dict[str, dict]:
    return requirements_by_extra(metadata.get_all("Requires-Dist"), metadata.get_all("Provides-Extra"))


def test_every_import_is_declared_by_the_core_or_its_layers_extra(declared):
    assert undeclared_imports(PACKAGE, declared) == []


def test_every_requirement_has_an_upper_bound(metadata):
    requirements = [Requirement(line) for line in metadata.get_all("Requires-Dist")]
    requirements = [r for r in requirements if canonicalize_name(r.name) != "robodata"]
    assert len(requirements) > 30  # the core, the extras and the test tools
    assert unbounded(requirements) == []


def test_the_wheel_declares_what_the_layers_use(declared):
    assert {"pylance", "pyarrow", "av", "aiobotocore"} <= set(declared[""])
    assert {"pydantic", "sqlalchemy", "dagster", "matplotlib"} <= set(
        declared["dagster"]
    )  # plots through robodata[plots]
    assert "pydantic" not in declared[""] and "torch" not in declared[""]
    # Dagster removes deprecated APIs in minor releases: its bound is the next minor, whatever the release
    dagster = declared["dagster"]["dagster"].specifier
    lower = next(spec.version for spec in dagster if spec.operator == ">=")
    upper = next(spec.version for spec in dagster if spec.operator == "<")
    major, minor = (int(part) for part in lower.split(".")[:2])
    assert Version(upper) == Version(f"{major}.{minor + 1}")


def test_layers_map_to_extras_by_their_longest_prefix():
    table = {"torch/": ("torch", "gpu"), "torch/lerobot_": ("torch", "interop"), "demo.py": ("dagster",)}
    assert layer_extras("torch/_loader.py", table) == ("torch", "gpu")
    assert layer_extras("torch/lerobot_meta.py", table) == ("torch", "interop")
    assert layer_extras("demo.py", table) == ("dagster",)
    assert layer_extras("reader/dataset.py", table) == ()
    assert layer_extras("defs/ingest/sensor.py") == ("dagster",)
    assert layer_extras("orchestration/defs/resources.py") == ("dagster",)


def test_every_module_robodata_does_not_install_is_still_imported():
    """Each module robodata does not install is still imported somewhere (else drop its entry)."""
    imported = {module for _, _, module, _ in imported_modules(PACKAGE)}
    assert set(NOT_INSTALLED_BY_ROBODATA) - imported == set()


def write(root: Path, relative: str, text: str) -> None:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_text(text)


def test_an_undeclared_import_inside_a_function_fails(tmp_path):
    package = tmp_path / "robodata"
    write(package, "__init__.py", "import numpy\nfrom . import defs\n")
    write(package, "defs/config.py", "import os\n\n\ndef config():\n    from pydantic import Field\n    return Field\n")
    lines = ["numpy>=2,<3", 'dagster<1.14,>=1.13; extra == "dagster"']
    declared = requirements_by_extra(lines, ["dagster", "torch"])
    assert undeclared_imports(package, declared) == [
        "defs/config.py:5 imports pydantic (pydantic): declare it in the core or extra 'dagster'"
    ]
    # declared by another layer's extra: still missing for defs/
    declared = requirements_by_extra([*lines, 'pydantic<3,>=2; extra == "torch"'], ["dagster", "torch"])
    assert len(undeclared_imports(package, declared)) == 1
    declared = requirements_by_extra([*lines, 'pydantic<3,>=2; extra == "dagster"'], ["dagster", "torch"])
    assert undeclared_imports(package, declared) == []
    # the layer table decides: the same file under a layer mapped to torch is fine
    assert (
        undeclared_imports(
            package,
            requirements_by_extra([*lines, 'pydantic<3; extra == "torch"'], ["dagster", "torch"]),
            {"defs/": ("torch",)},
        )
        == []
    )


def test_import_extra_must_name_an_extra_that_declares_the_module(tmp_path):
    package = tmp_path / "robodata"
    write(package, "view/_plots.py", 'def plot():\n    return import_extra("matplotlib", "interop", "plots")\n')
    declared = requirements_by_extra(['matplotlib<4; extra == "plots"'], ["plots", "interop"])
    assert undeclared_imports(package, declared) == [
        "view/_plots.py:2 imports matplotlib (matplotlib): declare it in the core or extra 'interop'"
    ]


def test_an_extra_inherits_the_extras_it_names():
    declared = requirements_by_extra(
        ['matplotlib<4,>=3.9; extra == "plots"', 'robodata[plots]; extra == "dagster"', "numpy<3"], ["plots", "dagster"]
    )
    assert {extra: sorted(reqs) for extra, reqs in declared.items()} == {
        "": ["numpy"],
        "plots": ["matplotlib"],
        "dagster": ["matplotlib"],
    }


def test_unbounded_names_requirements_without_a_ceiling():
    requirements = [Requirement(r) for r in ["av>=15", "av>=15,<19", "torch~=2.6", "x==1.0", "y!=2"]]
    assert unbounded(requirements) == ["av>=15", "y!=2"]


def test_the_wheel_ships_py_typed(wheel):
    """PEP 561: the marker tells a user's mypy or pyright to check calls against robodata's hints."""
    names = set(wheel.namelist())
    assert "robodata/py.typed" in names
    assert [n for n in names if n.endswith("/dagster.yaml")]  # the Dagster instance's, the other package data


def pinned_versions() -> dict[str, str]:
    """constraints.txt's exact versions, by canonical name."""
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_the_bounds_admit_what_ci_tests_and_what_lerobot_resolves(metadata):
    """The upper bounds hold constraints.txt's versions (the tested environment) and the
    versions `lerobot[dataset,training]==0.6.1` with `robodata[torch]` resolved to
    (docs/training.md, scripts/coinstall_lerobot.sh): av<16, fsspec<=2026.2.0, torch<2.12."""
    requirements = [Requirement(line) for line in metadata.get_all("Requires-Dist")]
    requirements = [r for r in requirements if canonicalize_name(r.name) != "robodata"]
    pins = pinned_versions()
    refused = [
        f"{r} refuses {pins[canonicalize_name(r.name)]}"
        for r in requirements
        if not r.specifier.contains(pins[canonicalize_name(r.name)])
    ]
    assert refused == []
    lerobot = {
        "torch": "2.11.0",
        "av": "15.1.0",
        "fsspec": "2026.2.0",
        "s3fs": "2026.2.0",
        "numpy": "2.2.6",
        "pylance": "14.0.2",
        "pyarrow": "26.0.1",
    }
    refused = [
        f"{r} refuses {lerobot[r.name]}"
        for r in requirements
        if r.name in lerobot and not r.specifier.contains(lerobot[r.name])
    ]
    assert refused == []
