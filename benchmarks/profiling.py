"""cProfile a measured call and say where its time goes, so a missed aim is explained by
numbers rather than a guess."""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

# (category, words any of which in "file:function" puts a profile entry in it), first match wins.
CATEGORIES = (
    # PyAV's container.seek and container.decode generator run inside this function's own frame,
    # so cProfile books the baseline's seek, demux and AV1 decode to it.
    ("seek, demux and decode (PyAV generator)", ("decode_video_frames_pyav",)),
    ("video decode", ("method 'decode' of 'av.", "method 'send_packet'", "method 'receive_frame'")),
    ("video decode", ("torchcodec",)),  # LeRobot's and LanceDBDataset's decoder (seek and decode in C++)
    ("YUV to RGB", ("to_ndarray", "reformat")),
    ("file open/seek/demux", ("av.open", "method 'seek'", "demux", "av.container", "posix.stat", "io.open")),
    # The peers' own Python (their file names contain "lance" too), before "Lance read".
    ("the reader's Python", ("lerobot_lancedb/", "lerobot/datasets/")),
    ("Lance read", ("lance", "_lib._dataset", "_lib._scanner", "read_blobs")),
    ("Arrow/Parquet rows", ("pyarrow", "to_pylist")),
    ("waiting on worker threads", ("acquire", "method 'wait'", "threading", "futures")),
)


@dataclass
class Profile:
    """Where one profiled call spent its time: seconds, share per category, top functions."""

    label: str
    seconds: float
    shares: dict[str, float]
    top: list[dict]

    def to_dict(self) -> dict:
        return asdict(self)

    def sentence(self) -> str:
        parts = [f"{share:.0%} {name}" for name, share in sorted(self.shares.items(), key=lambda kv: -kv[1])]
        return f"{self.label}: {self.seconds * 1000:.1f} ms per call, " + ", ".join(parts)


def profile_call(label: str, call: Callable[[], object], repeat: int = 3, top: int = 8) -> Profile:
    """Run ``call`` ``repeat`` times under cProfile (work in other threads is not seen, so profile
    single-threaded variants) and split its own time into CATEGORIES.

    >>> profile_call("robodata ds[i]", lambda: ds[5]).shares.keys()  # doctest: +SKIP
    dict_keys(['video decode', 'Lance read', 'YUV to RGB', 'Python and other'])
    """
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for _ in range(repeat):
        call()
    profiler.disable()
    elapsed = (time.perf_counter() - start) / repeat
    # (file, line, function) -> (cc, nc, tottime, cumtime, callers); typeshed leaves the table out
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    own = {f"{file}:{function}": entry[2] for (file, _, function), entry in stats.items()}
    return profile_from_own_times(label, elapsed, own, top)


def profile_from_own_times(label: str, seconds: float, own: dict[str, float], top: int = 8) -> Profile:
    """A Profile from own seconds per ``file:function`` (e.g. what ``peer_runner`` reports for a
    peer's process) and the seconds of one call.

    >>> profile_from_own_times("LanceDBDataset B", 0.4, {"torchcodec/x.py:get_frames_at": 0.3}).shares  # doctest: +SKIP
    {'video decode': 1.0}
    """
    total = sum(own.values()) or 1.0
    shares: dict[str, float] = {}
    for name, own_seconds in own.items():
        category = categorize(name)
        shares[category] = shares.get(category, 0.0) + own_seconds / total
    heaviest = sorted(own.items(), key=lambda kv: -kv[1])[:top]
    return Profile(
        label=label,
        seconds=seconds,
        shares={k: v for k, v in shares.items() if v >= 0.005},
        top=[{"function": name, "share": own_seconds / total} for name, own_seconds in heaviest if own_seconds > 0],
    )


def categorize(name: str) -> str:
    """The CATEGORIES entry a profiled ``file:function`` name belongs to."""
    lowered = name.lower()
    for category, words in CATEGORIES:
        if any(word in lowered for word in words):
            return category
    return "Python and other"
