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
    # Dagster's own rooms: the definitions (a folder per domain), the entry point that loads
    # them, and the instance helpers the CLI and the demo use (no definitions of their own).
    "definitions": {"defs"},
    "dagster_home": {"defs", "format", "storage", "errors"},
    "demo": LIBRARY | {"bench", "defs", "dagster_home"},
    "orchestration_bench": LIBRARY | {"bench", "defs", "definitions", "dagster_home"},
    "cli": LIBRARY | {"bench", "demo", "dagster_home", "orchestration_bench"},
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


def test_defs_holds_only_dagster_code():
    """Every module under defs/ is Dagster code (plain library code, such as the upload queue,
    lives in the library where it can be used and tested without Dagster)."""
    plain = [
        str(path.relative_to(PACKAGE.parent))
        for path in sorted((PACKAGE / "defs").rglob("*.py"))
        if path.stat().st_size and not any(m.split(".")[0] == "dagster" for _, m in _imports(PACKAGE, path))
    ]
    assert plain == []


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
