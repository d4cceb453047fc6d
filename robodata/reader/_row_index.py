"""The small per-row columns every read needs (episode, frame, GOP references), held as numpy.

A training process builds the index once and shares it with its DataLoader workers as
memory-mapped files (``SharedArrays``): a worker maps the same pages instead of scanning
frames.lance again and holding its own ~76 bytes per row.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref

import numpy as np

from robodata.format._schema import ref_columns


def _shared_root() -> str | None:
    """RAM-backed /dev/shm when the machine has it, else the temp directory."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


SHARED_PREFIX = "robodata-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def remove_orphans(root: str | None = None) -> list[str]:
    """Remove the shared-array folders whose owning process is gone (a rank killed before its
    finalizers ran): they are named ``robodata-<prefix>-<owner pid>-<random>``."""
    root = root or _shared_root() or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        parts = name.split("-")
        if not name.startswith(SHARED_PREFIX) or len(parts) < 4 or not parts[-2].isdigit():
            continue
        if not _alive(int(parts[-2])):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            removed.append(name)
    return removed


class SharedArrays:
    """Named numpy arrays in files that child processes memory-map rather than copy.

    The process that creates it owns the files (removed when it is garbage collected or the
    process exits); an unpickled copy in a worker only maps them. The folder is named after the
    owner's pid, so files a killed process left behind are removed by the next one started
    (``remove_orphans``), instead of holding /dev/shm until reboot.

    >>> import pickle
    >>> shared = SharedArrays("order"); shared.put("epoch-0", np.arange(4))
    >>> pickle.loads(pickle.dumps(shared)).get("epoch-0")  # memory-mapped, read-only
    memmap([0, 1, 2, 3])

    """

    def __init__(self, prefix: str) -> None:
        self.owner_pid = os.getpid()
        remove_orphans()
        self.directory = tempfile.mkdtemp(prefix=f"{SHARED_PREFIX}{prefix}-{self.owner_pid}-", dir=_shared_root())
        self._finalizer: weakref.finalize | None = weakref.finalize(self, shutil.rmtree, self.directory, True)
        self._mapped: dict[str, np.ndarray] = {}
        self._written: list[str] = []

    @property
    def owner(self) -> bool:
        return os.getpid() == self.owner_pid

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, f"{key}.npy")

    def put(self, key: str, array: np.ndarray, keep: int | None = None) -> None:
        """Store ``array`` under ``key``; with ``keep``, only the last ``keep`` keys stay."""
        path = self._path(key)
        staging = f"{path}.{os.getpid()}.partial.npy"  # renamed into place: readers never see half
        np.save(staging, np.ascontiguousarray(array), allow_pickle=False)
        os.replace(staging, path)
        self._written = [k for k in self._written if k != key] + [key]
        while keep is not None and len(self._written) > keep:
            old = self._written.pop(0)
            self._mapped.pop(old, None)
            try:
                os.remove(self._path(old))
            except FileNotFoundError:
                pass

    def get(self, key: str) -> np.ndarray | None:
        """The array stored under ``key``, memory-mapped read-only; None if there is none."""
        array = self._mapped.get(key)
        if array is None:
            try:
                array = np.load(self._path(key), mmap_mode="r", allow_pickle=False)
            except FileNotFoundError:
                return None
            self._mapped[key] = array
        return array

    def __getstate__(self) -> dict:
        return {"owner_pid": self.owner_pid, "directory": self.directory}

    def __setstate__(self, state: dict) -> None:
        self.owner_pid = state["owner_pid"]
        self.directory = state["directory"]
        self._mapped, self._written = {}, []
        self._finalizer = None  # only the owner removes the files


class RowIndex:
    """Per-row episode, frame and GOP reference arrays, with the (episode, frame) ordering
    windows need.

    >>> index = RowIndex(ds.lance_dataset, ["top"]); index.window_rows(np.array([5]), np.array([-1, 0]))
    (array([[4, 5]]), array([[False, False]]))
    """

    def __init__(self, frames, cameras: list[str]) -> None:
        refs = {camera: ref_columns(camera) for camera in cameras}
        columns = ["episode_index", "frame_index"] + [c for cam in cameras for c in (refs[cam][0], refs[cam][2])]
        table = frames.to_table(columns=columns)
        arrays = {
            "episode_index": table["episode_index"].to_numpy(),
            "frame_index": table["frame_index"].to_numpy(),
        }
        for cam in cameras:
            arrays[f"ref_id.{cam}"] = table[refs[cam][0]].to_numpy()
            arrays[f"frame_in_gop.{cam}"] = table[refs[cam][2]].to_numpy()
        # rank[i] is row i's position when rows are sorted by (episode, frame): a window step of
        # +1 is a step of +1 in that order.
        order = np.lexsort((arrays["frame_index"], arrays["episode_index"]))
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        _, inverse, counts = np.unique(arrays["episode_index"], return_inverse=True, return_counts=True)
        arrays.update(order=order, rank=rank, episode_length=counts[inverse])
        self._load(arrays, cameras)

    def _load(self, arrays: dict[str, np.ndarray], cameras: list[str]) -> None:
        self._arrays = arrays
        self.cameras = list(cameras)
        self.episode_index = arrays["episode_index"]
        self.frame_index = arrays["frame_index"]
        self.ref_id = {cam: arrays[f"ref_id.{cam}"] for cam in cameras}
        self.frame_in_gop = {cam: arrays[f"frame_in_gop.{cam}"] for cam in cameras}
        self.order = arrays["order"]
        self.rank = arrays["rank"]
        self.episode_length = arrays["episode_length"]

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        """Every array by the key ``mapped`` reads it back under."""
        return dict(self._arrays)

    def share(self) -> SharedArrays:
        """Write the arrays to memory-mappable files; pass the result to ``mapped`` elsewhere."""
        shared = SharedArrays("rows")
        for key, array in self._arrays.items():
            shared.put(key, array)
        return shared

    @classmethod
    def mapped(cls, shared: SharedArrays, cameras: list[str]) -> RowIndex:
        """The index another process ``share``-d, memory-mapped (read-only, shared pages)."""
        index = cls.__new__(cls)
        keys = ["episode_index", "frame_index", "order", "rank", "episode_length"]
        keys += [f"{kind}.{cam}" for cam in cameras for kind in ("ref_id", "frame_in_gop")]
        arrays = {}
        for key in keys:
            array = shared.get(key)
            if array is None:
                raise FileNotFoundError(f"the shared row index in {shared.directory} has no {key!r}")
            arrays[key] = array
        index._load(arrays, cameras)
        return index

    def __len__(self) -> int:
        return len(self.episode_index)

    def window_rows(self, indices: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows at ``frame + offset`` in each row's episode, clamped to the episode's first and
        last rows, and the mask of clamped (padded) positions, like LeRobot's delta_timestamps.

        Relies on an episode's frame_index running 0..n-1, which ingest guarantees."""
        frame = self.frame_index[indices][:, None]
        wanted = frame + offsets[None, :]
        clamped = np.clip(wanted, 0, self.episode_length[indices][:, None] - 1)
        rows = self.order[self.rank[indices][:, None] - frame + clamped]
        return rows, wanted != clamped
