"""A package's public names imported on first use (PEP 562), so importing the package does not
import what only some of its names need (PyTorch, for ``robodata.torch`` and ``robodata.lerobot``).

>>> namespace = {"__name__": "demo"}
>>> getattr_, dir_ = lazy_exports(namespace, {"sqrt": "math"})
>>> getattr_("sqrt")(9.0), "sqrt" in namespace, "sqrt" in dir_()
(3.0, True, True)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of a package whose public ``exports``
    (name -> the module that defines it) are imported when first asked for, then kept in
    ``namespace`` (the package's ``globals()``)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
