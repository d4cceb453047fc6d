"""How close a row's camera frame must be to the row's time: what ingest enforces and the
integrity checks verify."""

TIMESTAMP_SLACK_NS = 1_000_000  # 1 ms for container timestamp rounding


def alignment_tolerance_ns(fps: float) -> float:
    """The largest allowed distance between a row and its camera frame: half a camera period
    plus the rounding slack.

    >>> alignment_tolerance_ns(50.0)
    11000000.0
    """
    return 0.5e9 / fps + TIMESTAMP_SLACK_NS
