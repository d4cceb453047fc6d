"""Docstring examples: the ones in RUN execute against a small dataset (``ds``: the three
sample episodes); every other example is marked illustrative with ``# doctest: +SKIP``."""

import doctest
import importlib
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import robodata

PACKAGE = Path(robodata.__file__).parent
RUN = [
    "robodata.codec.codecs",
    "robodata.codec.settings",
    "robodata.codec.resize",
    "robodata.format.renditions",
    "robodata.codec.quality",
    "robodata.format.alignment",
    "robodata.format.ids",
    "robodata.format.schema",
    "robodata.integrity.gop_leases",
    "robodata.format.tables",
    "robodata.storage.uris",
    "robodata.storage.failures",
    "robodata.storage.upload_batches",
    "robodata.storage.uploads",
    "robodata.defs.upload_cursor",
    "robodata.reader.dataset",
    "robodata.reader.batch_reader",
    "robodata.interop.lerobot_rate",
    "robodata.defs.lineage",
    "robodata.defs.resources",
    "robodata.defs.checks",
    "robodata.view.plots",
]


@pytest.mark.parametrize("module", RUN)
def test_docstring_examples_run(module, ingested, monkeypatch, tmp_path):
    monkeypatch.delenv("ROBODATA_UPLOADS", raising=False)
    monkeypatch.chdir(tmp_path)  # examples name relative paths; none may exist here
    globs = {"robodata": robodata, "np": np, "pa": pa, "ds": robodata.open(ingested)}
    result = doctest.testmod(
        importlib.import_module(module), extraglobs=globs, optionflags=doctest.ELLIPSIS, report=True
    )
    assert result.failed == 0, f"{module}: {result.failed} docstring examples failed (output above)"
    assert result.attempted > 0, f"{module} has no examples that run; take it off RUN"


def test_every_other_example_is_marked_illustrative():
    unmarked = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if module in RUN:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"\s*>>> ", line) and "doctest: +SKIP" not in line:
                unmarked.append(f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}")
    assert unmarked == [], "run these in test_doctests.RUN or mark them '# doctest: +SKIP'"
