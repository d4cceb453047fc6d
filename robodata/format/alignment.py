"""How close a row's camera frame must be to the row's time: what ingest enforces and the
integrity checks verify."""

TIMESTAMP_SLACK_NS = 1_000_000  # 1 ms for container timestamp rounding


def alignment_tolerance_ns(fps: float) -> float:
    """The largest allowed distance between a row and its camera frame: one camera period plus
    the rounding slack. Inside the camera's span a row is at most half the gap between the two
    frames around it away, and a variable-rate camera whose frames jitter by up to half a
    period leaves gaps of up to two periods.

    >>> alignment_tolerance_ns(50.0)
    21000000.0
    """
    return 1e9 / fps + TIMESTAMP_SLACK_NS
