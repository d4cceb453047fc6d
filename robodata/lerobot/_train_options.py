"""``robodata-train``'s own flags, spelled as lerobot-train's: ``--robodata.<field>=<value>`` (or
``--robodata.<field> <value>``).

LeRobot parses its command line with draccus, whose dotted flags name fields of nested config
groups (``--dataset.repo_id``, ``--policy.type``). robodata's options are one more group,
``robodata``, that only ``robodata-train`` knows: they are taken out of the command line before
LeRobot parses the rest (draccus refuses a flag it does not know), and apply to robodata datasets
only (a LeRobot dataset trains as before).

>>> options, rest = split_arguments(["--robodata.order=uniform", "--robodata.frame_size", "224x224", "--steps=5"])
>>> options.order, options.frame_size, rest
('uniform', (224, 224), ['--steps=5'])
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from robodata.errors import InvalidArgumentError
from robodata.format._renditions import Rendition

PREFIX = "--robodata."
# Before the flag there was only this variable; it still chooses the order when the flag is absent.
ORDER_VARIABLE = "ROBODATA_TRAIN_ORDER"
DECODE_ONCE, UNIFORM = "decode_once", "uniform"
# Accepted spellings of each order ("block" is the variable's older name for decode_once).
ORDER_NAMES = {"decode_once": DECODE_ONCE, "block": DECODE_ONCE, "uniform": UNIFORM}

FLAGS = {
    "order": (
        "decode_once|uniform",
        "decode_once (default): robodata's decode-once block order, each GOP decoded once per epoch per "
        "DataLoader worker, items mixed within a window; uniform: LeRobot's own EpisodeAwareSampler "
        f"(uniform over items). Without the flag, ${ORDER_VARIABLE} (decode_once, block or uniform) chooses.",
    ),
    "window": (
        "N",
        "rows mixed at a time in each stream of the decode-once order (default: what the frame buffer of "
        "decoded frames holds, at most 4096); a larger window mixes more and may decode a GOP again.",
    ),
    "pool_mb": (
        "N",
        "MiB of compressed GOP bytes in each worker's pool of open runs in the decode-once order (default 128): "
        "rows are drawn from these runs at random; a larger pool mixes more episodes per batch.",
    ),
    "run_mb": (
        "N",
        "MiB of compressed GOP bytes in one run of the decode-once order (default 1): consecutive blocks of one "
        "episode, adjacent in storage, read in one range from object storage (0: blocks one by one).",
    ),
    "frame_size": (
        "WIDTHxHEIGHT",
        "camera frames at this size (e.g. 224x224), read from the stored training rendition of that size "
        "when the dataset has one (robodata add-rendition), else decoded at full size and scaled; "
        "default: the recorded size.",
    ),
}


@dataclass(frozen=True)
class RobodataOptions:
    """robodata-train's options for robodata datasets (``--robodata.*``)."""

    order: str | None = None  # None: $ROBODATA_TRAIN_ORDER, else decode_once
    window: int | None = None  # None: what the frame buffer holds
    pool_mb: int | None = None  # None: the order's default pool (128 MiB)
    run_mb: int | None = None  # None: the order's default run (1 MiB)
    frame_size: tuple[int, int] | None = None  # (height, width); None: the recorded size

    def training_order(self, environ: Mapping[str, str] | None = None) -> str:
        """``decode_once`` or ``uniform``: the flag, else ``$ROBODATA_TRAIN_ORDER``, else decode_once.

        >>> RobodataOptions().training_order({"ROBODATA_TRAIN_ORDER": "uniform"})
        'uniform'
        >>> RobodataOptions(order="decode_once").training_order({"ROBODATA_TRAIN_ORDER": "uniform"})
        'decode_once'
        """
        if self.order is not None:
            return self.order
        environ = os.environ if environ is None else environ
        value = environ.get(ORDER_VARIABLE) or DECODE_ONCE
        if value not in ORDER_NAMES:
            raise SystemExit(f"{ORDER_VARIABLE} must be one of {tuple(ORDER_NAMES)}, got {value!r}")
        return ORDER_NAMES[value]

    def order_bytes(self) -> dict[str, int]:
        """``run_bytes`` / ``pool_bytes`` of the decode-once order, for the flags given.

        >>> RobodataOptions(pool_mb=64).order_bytes()
        {'pool_bytes': 67108864}
        """
        given = {"run_bytes": self.run_mb, "pool_bytes": self.pool_mb}
        return {key: value << 20 for key, value in given.items() if value is not None}

    def flags(self) -> list[str]:
        """These options as the command line spells them (the ones given)."""
        values = {
            "order": self.order,
            "window": self.window,
            "pool_mb": self.pool_mb,
            "run_mb": self.run_mb,
            "frame_size": None if self.frame_size is None else Rendition.parse(self.frame_size).name,
        }
        return [f"{PREFIX}{name}={value}" for name, value in values.items() if value is not None]


def split_arguments(argv: Sequence[str]) -> tuple[RobodataOptions, list[str]]:
    """(robodata's options, the arguments for LeRobot): ``--robodata.*`` flags taken out of ``argv``.
    A flag robodata does not have, or a value it cannot take, is a SystemExit naming it."""
    given: dict[str, str] = {}
    rest: list[str] = []
    arguments = list(argv)
    i = 0
    while i < len(arguments):
        argument = arguments[i]
        i += 1
        if not argument.startswith(PREFIX):
            rest.append(argument)
            continue
        name, has_value, value = argument[len(PREFIX) :].partition("=")
        if name not in FLAGS:
            known = ", ".join(f"{PREFIX}{flag}" for flag in FLAGS)
            raise SystemExit(f"robodata-train: unknown flag {PREFIX}{name}; robodata's flags are {known}")
        if not has_value:
            if i >= len(arguments) or arguments[i].startswith("--"):
                raise SystemExit(f"robodata-train: {PREFIX}{name} needs a value ({FLAGS[name][0]})")
            value = arguments[i]
            i += 1
        given[name] = value
    return _options(given), rest


def _options(given: Mapping[str, str]) -> RobodataOptions:
    order = given.get("order")
    if order is not None and order not in ORDER_NAMES:
        raise SystemExit(f"robodata-train: {PREFIX}order must be decode_once or uniform, got {order!r}")
    window = given.get("window")
    if window is not None and not (window.isdigit() and int(window) >= 0):
        raise SystemExit(f"robodata-train: {PREFIX}window must be a number of rows (0 or more), got {window!r}")
    sizes_mb = {}
    for name in ("pool_mb", "run_mb"):
        value = given.get(name)
        if value is not None and not value.isdigit():
            raise SystemExit(f"robodata-train: {PREFIX}{name} must be a whole number of MiB (0 or more), got {value!r}")
        sizes_mb[name] = None if value is None else int(value)
    frame_size = given.get("frame_size")
    size = None
    if frame_size is not None:
        try:
            size = Rendition.parse(frame_size).size
        except InvalidArgumentError as exc:
            raise SystemExit(f"robodata-train: {PREFIX}frame_size: {exc}") from None
    return RobodataOptions(
        order=None if order is None else ORDER_NAMES[order],
        window=None if window is None else int(window),
        frame_size=size,
        **sizes_mb,
    )


def help_text() -> str:
    """What ``robodata-train --help`` shows before LeRobot's own help.

    >>> print(help_text().splitlines()[0])
    robodata-train: lerobot-train on robodata datasets (a folder with frames.lance, or s3://...).
    """
    lines = [
        "robodata-train: lerobot-train on robodata datasets (a folder with frames.lance, or s3://...).",
        "Every lerobot-train flag works as in lerobot-train; --dataset.revision takes a robodata version",
        "(a number or a tag; default: the latest, which the run records as a tag robodata-train-v<N>).",
        "",
        "robodata's flags (robodata datasets only):",
    ]
    for name, (value, text) in FLAGS.items():
        lines.append(f"  {PREFIX}{name}={value}")
        lines.append(textwrap.fill(text, width=96, initial_indent=" " * 6, subsequent_indent=" " * 6))
    return "\n".join(lines)
