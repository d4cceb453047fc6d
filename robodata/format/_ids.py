"""Episode ids, GOP reference ids and the only way values reach a Lance filter string."""

from __future__ import annotations

import hashlib
import operator
import re

import numpy as np

from robodata.errors import InvalidArgumentError

_EPISODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def validate_episode_id(episode_id: str) -> str:
    """Return ``episode_id`` if it is a safe folder and partition name, else raise InvalidArgumentError.

    Letters, digits, ``_``, ``-`` and ``.`` only (no ``..``), at most 128 characters.
    """
    if not isinstance(episode_id, str) or not _EPISODE_ID.match(episode_id) or ".." in episode_id:
        raise InvalidArgumentError(
            f"invalid episode id {episode_id!r}: use 1-128 letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return episode_id


def validate_episode_index(value: object) -> int:
    if isinstance(value, np.integer):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**62:
        raise InvalidArgumentError(f"episode_index must be a non-negative integer, got {value!r}")
    return value


def episode_filter(episode_indices: list[int] | int) -> str:
    """A Lance filter selecting episodes, built only from validated integers."""
    if isinstance(episode_indices, int):
        episode_indices = [episode_indices]
    values = [validate_episode_index(e) for e in episode_indices]
    if not values:
        raise ValueError("no episodes given")
    return f"episode_index IN ({', '.join(str(v) for v in values)})"


def ref_id_filters(ref_ids, chunk: int = 1000) -> list[str]:
    """Lance filters selecting GOPs by ``ref_ids``, at most ``chunk`` ids each (a filter with
    tens of thousands of literals is slow to plan), built only from integers.

    >>> ref_id_filters([7, -3, 12], chunk=2)
    ['ref_id IN (7, -3)', 'ref_id IN (12)']
    """
    values = [operator.index(r) for r in ref_ids]  # ints only: a float or a string is refused
    return [
        f"ref_id IN ({', '.join(str(v) for v in values[start : start + chunk])})"
        for start in range(0, len(values), chunk)
    ]


def sql_string(value: str) -> str:
    """``value`` as a Lance (DataFusion SQL) string literal: quoted, inner quotes doubled."""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return "'" + value.replace("'", "''") + "'"


def camera_filter(camera: str) -> str:
    """A Lance filter selecting one camera's GOPs, whatever characters its name holds.

    >>> camera_filter("o'brien")
    "camera = 'o''brien'"
    """
    return f"camera = {sql_string(camera)}"


def gop_ref_id(episode_index: int, camera: str, gop_index: int, data: bytes) -> int:
    """A content-derived int64 id: the same GOP of the same episode always gets the same id,
    so re-ingesting identical video finds its GOPs already stored."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{episode_index}/{camera}/{gop_index}/".encode())
    digest.update(data)
    return int.from_bytes(digest.digest(), "little", signed=True)
