"""Settings read from the environment, parsed one way."""

from __future__ import annotations

import os


def megabytes_setting(variable: str, default_mb: int) -> int:
    """``$variable`` as a whole number of megabytes, in bytes (``default_mb`` when unset).

    >>> megabytes_setting("ROBODATA_NOT_SET_ANYWHERE", 64)
    67108864
    """
    raw = os.environ.get(variable) or str(default_mb)
    if not raw.isdigit():
        raise ValueError(f"{variable} must be a whole number of megabytes, got {raw!r}")
    return int(raw) << 20
