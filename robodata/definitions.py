"""The Dagster entry point (workspace.yaml, ``dagster dev``, ``dagster ... -m robodata.definitions``).

Dagster's own defs-folder loading is the one path: every module under ``robodata/defs/`` (a
folder per domain) is found and its ``defs`` merged, exactly as ``dg`` loads the ``[tool.dg]``
project. The tree is built from the imported package, not from pyproject.toml, so a wheel
install loads the same definitions as a checkout.
"""

from pathlib import Path

import dagster as dg

import robodata.defs

defs = dg.ComponentTree.from_module(
    defs_module=robodata.defs, project_root=Path(robodata.defs.__file__).parents[2]
).build_defs()
