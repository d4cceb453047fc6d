"""The layers of robodata, pinned: which part may import which (read with ``ast``, so imports
inside functions count too). The library works without Dagster; codec/ knows nothing of Lance;
reading never imports writing code; edits do not import ingest."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "robodata"

LIBRARY = {
    "errors",
    "storage",
    "codec",
    "format",
    "reader",
    "ingest",
    "edits",
    "interop",
    "summary",
    "sample_data",
    "view",
    "torch",
}
LIBRARY |= {"quiet_lance"}
# layer -> the robodata layers it may import (itself always allowed)
ALLOWED = {
    "errors": set(),
    "quiet_lance": set(),  # sets LANCE_LOG before lance loads: imports nothing of robodata
    "storage": {"errors"},
    "codec": set(),
    "format": {"storage", "errors"},
    "reader": {"codec", "format", "storage", "errors"},
    # Write, audit, publish: an ingest reads back what it staged with the reader's checks.
    "ingest": {"codec", "format", "storage", "errors", "reader"},
    "edits": {"format", "storage", "errors"},
    "interop": {"codec", "format", "storage", "errors", "ingest", "reader"},
    "summary": {"format", "reader", "storage", "errors"},
    "sample_data": {"interop", "format", "storage", "errors"},
    "view": {"reader", "format", "storage", "errors"},  # it only reads
    "torch": {"reader", "format", "interop", "storage", "errors"},  # reads, in LeRobot's keys
    "__init__": LIBRARY,
    "bench": LIBRARY,
    "defs": LIBRARY | {"bench"},
    "definitions": {"defs"},
    "instance_commands": {"defs", "storage", "errors"},
    "demo": LIBRARY | {"bench", "defs"},
    "orchestration_bench": LIBRARY | {"bench", "defs", "definitions"},
    "cli": LIBRARY | {"bench", "demo", "instance_commands", "orchestration_bench"},
}
# third-party packages a layer must not import
FORBIDDEN = {layer: {"dagster"} for layer in LIBRARY | {"bench", "__init__"}}
FORBIDDEN["codec"] = {"dagster", "lance", "pyarrow"}


def _layer(package: Path, path: Path) -> str:
    parts = path.relative_to(package).parts
    return parts[0] if len(parts) > 1 else path.stem


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
                target = rest.split(".")[0]
                if target != layer and target not in ALLOWED[layer]:
                    found.append(f"{where}:{line} imports {module} ({layer} -> {target})")
            elif top in FORBIDDEN.get(layer, ()):
                found.append(f"{where}:{line} imports {module} ({layer} must not use {top})")
    return found


def test_every_import_crosses_layers_only_where_allowed():
    assert _violations() == []


def test_the_rules_name_the_offending_module_and_import(tmp_path):
    package = tmp_path / "robodata"
    (package / "reader").mkdir(parents=True)
    (package / "codec").mkdir()
    (package / "reader" / "probe.py").write_text("import numpy\n\ndef f():\n    from robodata.ingest import staging\n")
    (package / "codec" / "probe.py").write_text("from .gop_encoder import GopEncoder\nimport lance\n")
    assert _violations(package) == [
        "robodata/codec/probe.py:2 imports lance (codec must not use lance)",
        "robodata/reader/probe.py:4 imports robodata.ingest (reader -> ingest)",
    ]


# --- RoboDataset's private state stays in reader/ -----------------------------------------------
ATTRIBUTE_CALLS = {"getattr", "setattr", "hasattr", "delattr"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _dataset_private_names(package: Path = PACKAGE) -> set[str]:
    """RoboDataset's private attributes: every ``self._x`` it assigns and every ``_x`` it defines."""
    tree = ast.parse((package / "reader" / "dataset.py").read_text())
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
    """Outside reader/: attribute access by one of RoboDataset's private names (on anything but
    ``self``/``cls``, whose attributes are their own class's), the same through getattr and
    friends, and imports of a private name from robodata.reader."""
    private = _dataset_private_names(package)
    found = []
    for path in sorted(package.rglob("*.py")):
        if _layer(package, path) == "reader":
            continue
        where = path.relative_to(package.parent)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in private:
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    found.append(f"{where}:{node.lineno} uses RoboDataset's private {node.attr}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_CALLS:
                named = node.args[1] if len(node.args) > 1 else None
                if isinstance(named, ast.Constant) and named.value in private:
                    found.append(f"{where}:{node.lineno} uses RoboDataset's private {named.value}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("robodata.reader"):
                for alias in node.names:
                    if _private(alias.name):
                        found.append(f"{where}:{node.lineno} imports the private {node.module}.{alias.name}")
    return sorted(found, key=lambda text: (text.split(":")[0], int(text.split(":")[1].split()[0])))


def test_nothing_outside_reader_touches_robodataset_private_state():
    assert {"_rows", "_frames", "_storage_options", "_gop_index", "_check_indices"} <= _dataset_private_names()
    assert _private_reach() == []


def test_the_private_state_rule_names_the_file_line_and_name(tmp_path):
    package = tmp_path / "robodata"
    (package / "reader").mkdir(parents=True)
    (package / "torch").mkdir()
    (package / "reader" / "dataset.py").write_text(
        "class RoboDataset:\n"
        "    def __init__(self):\n"
        "        self._rows = None\n"
        "        self.cameras = []\n"
        "    def _check(self):\n"
        "        return self._rows\n"
    )
    (package / "torch" / "probe.py").write_text(
        "from robodata.reader.dataset import _to_numpy, open_dataset\n"
        "\n"
        "class Reader:\n"
        "    def __init__(self, ds):\n"
        "        self._rows = ds._rows\n"  # its own _rows is fine; the dataset's is not
        "        ds._check()\n"
        "        getattr(ds, '_rows')\n"
        "        ds.cameras\n"
    )
    assert _private_reach(package) == [
        "robodata/torch/probe.py:1 imports the private robodata.reader.dataset._to_numpy",
        "robodata/torch/probe.py:5 uses RoboDataset's private _rows",
        "robodata/torch/probe.py:6 uses RoboDataset's private _check",
        "robodata/torch/probe.py:7 uses RoboDataset's private _rows",
    ]
