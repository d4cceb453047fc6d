"""The code layout in README.md and docs/architecture.md matches the tree: every folder either
block names exists, every package folder and every top-level folder is named, and
docs/architecture.md names every module at the package's root."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "robodata"
DOCS = ("README.md", "docs/architecture.md")


def layout_block(text: str, where: str = "the document") -> list[str]:
    """The lines of the fenced block right after the "## Code layout" heading."""
    heading = text.find("## Code layout")
    assert heading >= 0, f"{where} has no '## Code layout' heading"
    opened = text.index("```", heading)
    body = text.index("\n", opened) + 1
    return text[body : text.index("```", body)].splitlines()


def named_entries(lines: list[str]) -> tuple[set[str], set[str]]:
    """(top-level names, names inside robodata/): a line's first word, at column 0 or indented by
    two; an indented line that starts a list of files ("cli.py, definitions.py (...), ...")
    names each file of it."""
    top, inside = set(), set()
    for line in lines:
        if not line.strip() or line.startswith("   "):
            continue  # blank, or the continuation of the line above
        if line.startswith("  "):
            first = line.split()[0]
            names = re.findall(r"(?:^|,\s)(\w+\.py)", line.strip()) if first.endswith(".py,") else [first]
            inside.update(name.rstrip("/") for name in names)
        else:
            top.add(line.split()[0].rstrip("/"))
    return top, inside


def top_level_folders() -> set[str]:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {path.split("/")[0] for path in tracked.splitlines() if "/" in path and not path.startswith(".")}


def layout_mismatches(document: str, root: Path = ROOT, folders: set[str] | None = None) -> list[str]:
    top, inside = named_entries(layout_block((root / document).read_text(), document))
    package = root / "robodata"
    found = [f"{document} names {name}/, not in the tree" for name in sorted(top) if not (root / name).exists()]
    found += [
        f"{document} names robodata/{name}, not in the tree" for name in sorted(inside) if not (package / name).exists()
    ]
    found += [
        f"{document} does not name robodata/{name}/"
        for name in sorted(p.parent.name for p in package.glob("*/__init__.py"))
        if name not in inside
    ]
    found += [f"{document} does not name {name}/" for name in sorted(folders or top_level_folders()) if name not in top]
    return found


@pytest.mark.parametrize("document", DOCS)
def test_the_layout_names_what_is_in_the_tree_and_only_that(document):
    assert layout_mismatches(document) == []


def test_architecture_names_every_module_at_the_package_root():
    text = "\n".join(layout_block((ROOT / "docs/architecture.md").read_text()))
    modules = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert [name for name in modules if not re.search(rf"\b{re.escape(name)}\b", text)] == []


def test_a_renamed_folder_or_a_new_package_is_caught(tmp_path):
    (tmp_path / "robodata" / "codec").mkdir(parents=True)
    (tmp_path / "robodata" / "codec" / "__init__.py").write_text("")
    (tmp_path / "robodata" / "newroom").mkdir()
    (tmp_path / "robodata" / "newroom" / "__init__.py").write_text("")
    (tmp_path / "robodata" / "cli.py").write_text("")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "layout.md").write_text(
        "# x\n\n## Code layout\n\n```\nrobodata/\n  codec/   GOPs\n  reader/  rows\n"
        "              more words about reader\n  cli.py, errors.py (every error)\ndocs/   guides\n```\n"
    )
    assert layout_mismatches("docs/layout.md", tmp_path, folders={"robodata", "docs", "scripts"}) == [
        "docs/layout.md names robodata/errors.py, not in the tree",
        "docs/layout.md names robodata/reader, not in the tree",
        "docs/layout.md does not name robodata/newroom/",
        "docs/layout.md does not name scripts/",
    ]
