"""The layers of robodata, pinned: which part may import which (read with ``ast``, so imports
inside functions count too). The library works without Dagster; codec/ knows nothing of Lance;
reading never imports writing code; edits do not import ingest; integrity/ (checksums, audits,
verify, GOP leases) sits below the reader, ingest and edits, which all use it, and no two layers
import each other. The benchmarks (top-level ``benchmarks/``, outside the wheel) are imported only
inside the functions of three entry points, after ``require_benchmarks``."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "robodata"
# Code outside the wheel that uses robodata as a user would: public names only
# (test_code_outside_the_wheel_imports_only_public_names).
OUTSIDE = [PACKAGE.parent / folder for folder in ("benchmarks", "examples", "scripts")]

LIBRARY = {
    "errors",
    "storage",
    "codec",
    "format",
    "integrity",
    "reader",
    "ingest",
    "edits",
    "interop",
    "summary",
    "sample_data",
    "view",
    "torch",
    "lerobot",
    "measure",
}
LIBRARY |= {"quiet_lance", "source_checkout", "lazy_exports"}
# layer -> the robodata layers it may import (itself always allowed)
ALLOWED = {
    "errors": set(),
    "quiet_lance": set(),  # sets LANCE_LOG before lance loads: imports nothing of robodata
    "lazy_exports": set(),  # a package's public names imported on first use (torch, lerobot)
    "env_settings": set(),  # settings read from the environment (ROBODATA_*_MB): imports nothing of robodata
    "source_checkout": {"errors"},  # finds benchmarks/ beside robodata/ in a source checkout
    "storage": {"errors"},
    "codec": set(),
    "format": {"storage", "errors"},
    # Every read checks GOP checksums, and ingest, edits and verify check what they write or
    # keep, so integrity sits below all of them: it opens tables through format.tables, never
    # through the reader (a caller that wants a read through the reader passes an opened dataset).
    "integrity": {"codec", "format", "storage", "errors"},
    "reader": {"codec", "format", "storage", "errors", "integrity", "env_settings"},
    # Write, audit, publish: an ingest checks what it staged with integrity's checks, not the reader.
    "ingest": {"codec", "format", "storage", "errors", "integrity"},
    "edits": {"format", "storage", "errors", "integrity"},  # gc reads integrity's GOP leases
    # The HDF5 import and the format registry, which names LeRobot's episode source.
    "interop": {"codec", "format", "storage", "errors", "ingest", "reader", "lerobot"},
    "summary": {"format", "reader", "storage", "errors"},
    "sample_data": {"interop", "format", "storage", "errors"},
    "view": {"reader", "format", "storage", "errors"},  # it only reads
    "torch": {
        "reader",
        "format",
        "storage",
        "errors",
        "lazy_exports",
        "env_settings",
    },  # the training loader: knows nothing of LeRobot's formats
    # Everything LeRobot: its formats, export and import (through ingest's driver), its stats,
    # and LeRobotCompatDataset on the training loader.
    "lerobot": {"torch", "reader", "ingest", "format", "codec", "storage", "errors", "lazy_exports"},
    # How fast a dataset reads here (the benchmark_report asset's figures): it times the reader and
    # the training loader, and reads GOPs and checksums them as the reader does.
    "measure": {"reader", "torch", "codec", "format", "storage", "integrity", "errors"},
    "__init__": LIBRARY,
    # Dagster's one room: the definitions (defs/, a folder per domain), the entry point that loads
    # them, the instance helpers, the cluster pieces (deploy/dagster.yaml's storage and run
    # launcher, `deploy/cluster.sh wait`), the upload queue and the demo.
    "orchestration": LIBRARY,
    "cli": LIBRARY | {"orchestration"},
}
# third-party packages a layer must not import: only orchestration/ imports dagster
FORBIDDEN = {layer: {"dagster"} for layer in LIBRARY | {"__init__", "cli"}}
FORBIDDEN["codec"] = {"dagster", "lance", "pyarrow"}
# The modules that may run the benchmarks (by file name, wherever their folder moves), each only
# inside a function that first calls require_benchmarks: the CLI's bench command (cli/_bench.py),
# the benchmark_report asset, the demo.
BENCHMARK_ENTRY_POINTS = {"_bench.py", "benchmark.py", "_demo.py"}


def _layer(package: Path, path: Path) -> str:
    parts = path.relative_to(package).parts
    return parts[0] if len(parts) > 1 else _room(path.stem)


def _room(name: str) -> str:
    """A module at the package's root is its own room, named without its private ``_``."""
    return name if name == "__init__" else name.lstrip("_")


def _imports(package: Path, path: Path):
    """(line, imported module) for every absolute or relative import in ``path``."""
    dotted = ".".join(("robodata",) + path.relative_to(package).parent.parts)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = dotted.rsplit(".", node.level - 1)[0] if node.level > 1 else dotted
                yield node.lineno, f"{base}.{node.module}" if node.module else base
            else:
                yield node.lineno, node.module


def _violations(package: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        layer = _layer(package, path)
        assert layer in ALLOWED, f"{path}: layer {layer!r} has no rule in test_layers.ALLOWED; add one"
        where = path.relative_to(package.parent)
        for line, module in _imports(package, path):
            top, _, rest = module.partition(".")
            if top == "robodata" and rest:
                target = _room(rest.split(".")[0])
                if target != layer and target not in ALLOWED[layer]:
                    found.append(f"{where}:{line} imports {module} ({layer} -> {target})")
            elif top in FORBIDDEN.get(layer, ()):
                found.append(f"{where}:{line} imports {module} ({layer} must not use {top})")
    return found


def _benchmark_imports(package: Path = PACKAGE) -> list[str]:
    """Every import of ``benchmarks`` that is not inside a function of an entry point, or whose
    function does not call ``require_benchmarks`` first."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(package.parent)
        guarded = set()
        if path.name in BENCHMARK_ENTRY_POINTS:
            for function in ast.walk(tree):
                if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    calls = [
                        node.lineno
                        for node in ast.walk(function)
                        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "require_benchmarks"
                    ]
                    guarded |= {
                        node.lineno
                        for node in ast.walk(function)
                        if isinstance(node, ast.Import | ast.ImportFrom) and calls and min(calls) < node.lineno
                    }
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            for name in names:
                if name.partition(".")[0] == "benchmarks" and node.lineno not in guarded:
                    found.append(f"{where}:{node.lineno} imports {name} outside a guarded entry point")
    return found


def test_every_import_crosses_layers_only_where_allowed():
    assert _violations() == []


def test_no_two_layers_may_import_each_other_even_indirectly():
    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for target in ALLOWED.get(start, set()) - {start}:
            if target == goal or (target not in seen and reaches(target, goal, seen | {target})):
                return True
        return False

    cycles = sorted(layer for layer in ALLOWED if layer != "__init__" and reaches(layer, layer, set()))
    assert cycles == []


def test_only_the_entry_points_import_benchmarks_and_only_after_require_benchmarks():
    assert _benchmark_imports() == []


def test_the_benchmarks_rule_names_each_unguarded_import(tmp_path):
    package = tmp_path / "robodata"
    (package / "reader").mkdir(parents=True)
    (package / "cli").mkdir()
    (package / "reader" / "probe.py").write_text("def f():\n    from benchmarks.loader import main\n")
    (package / "cli" / "_bench.py").write_text(
        "import benchmarks\n\n"
        "def ok():\n    require_benchmarks('x')\n    from benchmarks.readpath import main\n\n"
        "def early():\n    from benchmarks.readpath import main\n    require_benchmarks('x')\n"
    )
    assert _benchmark_imports(package) == [
        "robodata/cli/_bench.py:1 imports benchmarks outside a guarded entry point",
        "robodata/cli/_bench.py:8 imports benchmarks.readpath outside a guarded entry point",
        "robodata/reader/probe.py:2 imports benchmarks.loader outside a guarded entry point",
    ]


def _private_lerobot_imports(package: Path = PACKAGE, outside: list[Path] = OUTSIDE) -> list[str]:
    """Imports of robodata.lerobot's private modules (``robodata.lerobot._name``) from anywhere but
    robodata/lerobot/: the package and the code beside it that uses it (benchmarks, examples,
    scripts). LeRobot's formats are known in one place; everyone else uses its public names."""
    found = []
    files = [p for p in sorted(package.rglob("*.py")) if _layer(package, p) != "lerobot"]
    files += [p for folder in outside for p in sorted(folder.rglob("*.py"))]
    for path in files:
        where = path.relative_to(package.parent)
        for node, name in _absolute_imports(path):
            parts = name.split(".")
            if parts[:2] == ["robodata", "lerobot"] and len(parts) > 2 and _private(parts[2]):
                found.append(f"{where}:{node.lineno} imports {name}")
    return found


def _absolute_imports(path: Path):
    """(node, dotted name) of every absolute import in ``path``: an ``import a.b`` gives a.b, a
    ``from a.b import c`` gives a.b and a.b.c (c may be a module or a name)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            yield node, name


def _private_outside_imports(outside: list[Path] = OUTSIDE, root: Path = PACKAGE.parent) -> list[str]:
    """Imports of a private robodata module or name (a ``_name`` anywhere in the dotted path or
    among the imported names) from the code outside the wheel (benchmarks, examples, scripts):
    it uses robodata as a user would, so a refactor of robodata's insides cannot break it."""
    found = []
    for path in [p for folder in outside for p in sorted(folder.rglob("*.py"))]:
        where = path.relative_to(root)
        reported: set[int] = set()  # one finding per import statement
        for node, name in _absolute_imports(path):
            parts = name.split(".")
            if id(node) not in reported and parts[0] == "robodata" and any(_private(part) for part in parts[1:]):
                reported.add(id(node))
                found.append(f"{where}:{node.lineno} imports {name}")
    return found


def test_code_outside_the_wheel_imports_only_public_names():
    assert _private_outside_imports() == []


def test_the_public_names_rule_names_each_private_import(tmp_path):
    bench = tmp_path / "benchmarks"
    (bench / "peers").mkdir(parents=True)
    (bench / "probe.py").write_text(
        "import robodata.storage._uris as uris\n"
        "from robodata.reader import open_dataset, _decode_pool\n"
        "from robodata.torch import BatchReader\n"
        "from benchmarks._private import helper\n"  # the benchmarks' own modules are theirs
        "from robodata.ingest import _writer\n"
    )
    (bench / "peers" / "probe.py").write_text("def f():\n    from robodata.format._ids import camera_filter\n")
    assert _private_outside_imports([bench], tmp_path) == [
        "benchmarks/peers/probe.py:2 imports robodata.format._ids",
        "benchmarks/probe.py:1 imports robodata.storage._uris",
        "benchmarks/probe.py:2 imports robodata.reader._decode_pool",
        "benchmarks/probe.py:5 imports robodata.ingest._writer",
    ]


def test_only_the_lerobot_package_imports_its_private_modules():
    assert _private_lerobot_imports() == []


def test_the_training_loader_knows_nothing_of_lerobot_or_interop():
    reached = {
        module.split(".")[1]
        for path in sorted((PACKAGE / "torch").rglob("*.py"))
        for _, module in _imports(PACKAGE, path)
        if module.startswith("robodata.")
    }
    assert reached & {"lerobot", "interop"} == set()
    assert {"lerobot", "interop"} & ALLOWED["torch"] == set()


def test_the_private_lerobot_rule_names_each_import(tmp_path):
    package = tmp_path / "robodata"
    (package / "lerobot").mkdir(parents=True)
    (package / "torch").mkdir()
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (package / "lerobot" / "_export.py").write_text("from robodata.lerobot._format import ACTION\n")
    (package / "torch" / "probe.py").write_text("from robodata.lerobot import _stats, export_lerobot\n")
    (scripts / "probe.py").write_text("import robodata.lerobot._meta\nfrom robodata.lerobot import train\n")
    assert _private_lerobot_imports(package, [scripts]) == [
        "robodata/torch/probe.py:1 imports robodata.lerobot._stats",
        "scripts/probe.py:1 imports robodata.lerobot._meta",
    ]


def _has_code(path: Path) -> bool:
    """Whether ``path`` holds more than a docstring (a package's __init__ may only describe it)."""
    body = ast.parse(path.read_text()).body
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in body)


def test_defs_holds_only_dagster_code():
    """Every module under orchestration/defs/ is Dagster code (plain library code lives in the
    library, where it can be used and tested without Dagster)."""
    defs = sorted((PACKAGE / "orchestration" / "defs").rglob("*.py"))
    assert len(defs) > 20  # the folder is where this looks
    plain = [
        str(path.relative_to(PACKAGE.parent))
        for path in defs
        if _has_code(path) and not any(m.split(".")[0] == "dagster" for _, m in _imports(PACKAGE, path))
    ]
    assert plain == []


def test_the_rules_name_the_offending_module_and_import(tmp_path):
    package = tmp_path / "robodata"
    (package / "reader").mkdir(parents=True)
    (package / "codec").mkdir()
    (package / "reader" / "probe.py").write_text(
        "import numpy\n\ndef f():\n    from robodata.ingest import _two_step as two_step\n"
    )
    (package / "codec" / "probe.py").write_text("from .gop_encoder import GopEncoder\nimport lance\n")
    assert _violations(package) == [
        "robodata/codec/probe.py:2 imports lance (codec must not use lance)",
        "robodata/reader/probe.py:4 imports robodata.ingest (reader -> ingest)",
    ]


# --- RoboDataset's private state stays in its own module ---------------------------------------
ATTRIBUTE_CALLS = {"getattr", "setattr", "hasattr", "delattr"}
# The class and the loader functions beside it (share_rows, adopt_rows, gop_store) are the only
# code that touches the dataset's private state; the GOP store, the version history and the rest
# of reader/ go through its public accessors like every other layer.
DATASET_MODULE = Path("reader") / "_dataset.py"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _dataset_private_names(package: Path = PACKAGE) -> set[str]:
    """RoboDataset's private attributes: every ``self._x`` it assigns and every ``_x`` it defines."""
    tree = ast.parse((package / DATASET_MODULE).read_text())
    dataset = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RoboDataset")
    names = {n.name for n in dataset.body if isinstance(n, ast.FunctionDef) and _private(n.name)}
    for node in ast.walk(dataset):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and _private(node.attr)
        ):
            names.add(node.attr)
    return names


def _private_reach(package: Path = PACKAGE) -> list[str]:
    """Outside reader/_dataset.py (reader/'s other modules included): attribute access by one of
    RoboDataset's private names (on anything but ``self``/``cls``, whose attributes are their own
    class's), the same through getattr and friends; outside reader/, imports of a private name
    from robodata.reader."""
    private = _dataset_private_names(package)
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package) == DATASET_MODULE:
            continue
        in_reader = _layer(package, path) == "reader"
        where = path.relative_to(package.parent)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in private:
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    found.append(f"{where}:{node.lineno} uses RoboDataset's private {node.attr}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_CALLS:
                named = node.args[1] if len(node.args) > 1 else None
                if isinstance(named, ast.Constant) and named.value in private:
                    found.append(f"{where}:{node.lineno} uses RoboDataset's private {named.value}")
            elif (
                isinstance(node, ast.ImportFrom) and (node.module or "").startswith("robodata.reader") and not in_reader
            ):
                for alias in node.names:
                    if _private(alias.name):
                        found.append(f"{where}:{node.lineno} imports the private {node.module}.{alias.name}")
    return sorted(found, key=lambda text: (text.split(":")[0], int(text.split(":")[1].split()[0])))


def test_nothing_outside_the_dataset_module_touches_robodataset_private_state():
    assert {"_rows", "_frames", "_storage_options", "_gop_store", "_vouch"} <= _dataset_private_names()
    assert _private_reach() == []


def test_the_private_state_rule_names_the_file_line_and_name(tmp_path):
    package = tmp_path / "robodata"
    (package / "reader").mkdir(parents=True)
    (package / "torch").mkdir()
    (package / "reader" / "_dataset.py").write_text(
        "class RoboDataset:\n"
        "    def __init__(self):\n"
        "        self._rows = None\n"
        "        self.cameras = []\n"
        "    def _check(self):\n"
        "        return self._rows\n"
    )
    (package / "torch" / "probe.py").write_text(
        "from robodata.reader._dataset import _to_numpy, open_dataset\n"
        "\n"
        "class Reader:\n"
        "    def __init__(self, ds):\n"
        "        self._rows = ds._rows\n"  # its own _rows is fine; the dataset's is not
        "        ds._check()\n"
        "        getattr(ds, '_rows')\n"
        "        ds.cameras\n"
    )
    (package / "reader" / "_gop_store.py").write_text(
        "from robodata.reader._selection import _checked\n"  # a sibling's private helper: fine in reader/
        "\n"
        "class GopStore:\n"
        "    def __init__(self, ds):\n"
        "        self._ds = ds\n"
        "    def refs(self):\n"
        "        return self._ds._rows\n"
    )
    assert _private_reach(package) == [
        "robodata/reader/_gop_store.py:7 uses RoboDataset's private _rows",
        "robodata/torch/probe.py:1 imports the private robodata.reader._dataset._to_numpy",
        "robodata/torch/probe.py:5 uses RoboDataset's private _rows",
        "robodata/torch/probe.py:6 uses RoboDataset's private _check",
        "robodata/torch/probe.py:7 uses RoboDataset's private _rows",
    ]
