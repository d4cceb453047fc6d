"""The benchmarks live in robodata's source checkout (the top-level ``benchmarks/`` folder beside
``robodata/``), not in the wheel. The few entry points that run them (``robodata bench``, the
``benchmark_report`` asset, the demo's report) ask here first, then import ``benchmarks`` inside
the function that uses it, so the product never depends on it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from robodata.errors import BenchmarksUnavailableError

# The folder that holds robodata/: a source checkout (editable install or PYTHONPATH) or, for a
# wheel, site-packages. Only a checkout has robodata's pyproject.toml beside the benchmarks.
CHECKOUT = Path(__file__).resolve().parents[1]


def benchmarks_available() -> bool:
    """True when robodata runs from a source checkout whose ``benchmarks`` package can be imported
    (the checkout is put on ``sys.path`` if it is not there yet).

    >>> benchmarks_available()  # in a source checkout
    True
    """
    try:
        require_benchmarks()
    except BenchmarksUnavailableError:
        return False
    return True


def require_benchmarks(what: str = "") -> None:
    """Make the checkout's ``benchmarks`` package importable, or raise BenchmarksUnavailableError
    saying where the benchmarks are (prefixed with ``what``, e.g. ``"benchmark_report"``).

    >>> require_benchmarks("benchmark_report")  # returns quietly in a source checkout
    """
    at = f"{what}: " if what else ""
    package = CHECKOUT / "benchmarks" / "__init__.py"
    if not (package.is_file() and (CHECKOUT / "pyproject.toml").is_file()):
        raise BenchmarksUnavailableError(
            f"{at}the benchmarks ship with robodata's source checkout (its benchmarks/ folder), not with the "
            "installed package; run them from a clone of the repository"
        )
    if str(CHECKOUT) not in sys.path:
        sys.path.insert(0, str(CHECKOUT))
    spec = importlib.util.find_spec("benchmarks")
    found = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    if found != package:
        raise BenchmarksUnavailableError(
            f"{at}another package named 'benchmarks' ({found}) hides the checkout's {package.parent}"
        )
