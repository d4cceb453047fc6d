"""robodata.reader's surface is its ``__init__``: every other module under reader/ is private
(``_name.py``), and the names users import are exactly these."""

from __future__ import annotations

from pathlib import Path

import robodata.reader

READER = Path(robodata.reader.__file__).parent


def test_every_reader_module_but_init_is_private():
    modules = sorted(p.name for p in READER.glob("*.py"))
    assert [name for name in modules if name != "__init__.py" and not name.startswith("_")] == []


def test_the_public_names_are_the_read_api():
    """Only what a user calls: the loader's plumbing (share_rows, adopt_rows, gop_store, GopStore,
    SharedArrays) is private to robodata's own layers."""
    assert sorted(robodata.reader.__all__) == [
        "FrameBatch",
        "PIXEL_FORMATS",
        "PLANAR_RGB",
        "RoboDataset",
        "RowIndex",
        "WindowBatch",
        "open_dataset",
        "to_numpy",
    ]
    assert all(getattr(robodata.reader, name) is not None for name in robodata.reader.__all__)
    assert not {"share_rows", "adopt_rows", "gop_store", "GopStore", "SharedArrays"} & set(dir(robodata.reader))


def test_the_loader_plumbing_is_not_on_the_dataset():
    assert {"share_rows", "adopt_rows", "gops", "take_blobs_decoded", "take_windows"}.isdisjoint(
        dir(robodata.reader.RoboDataset)
    )
