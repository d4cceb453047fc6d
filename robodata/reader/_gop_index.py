"""The in-memory lookup from a GOP's ref_id to where its bytes live and how to cut its packets.

Built once per open dataset (one scan of gops.lance's small columns); after that a frame read
costs only the GOP's own bytes. It also keeps every column ``row_xxh3`` covers, so a read checks
the rows it uses against their checksum (``unchecked_row_problems``), each row once per process.

A training process shares its index with its DataLoader workers through the same memory-mapped
files as its row index (``SharedArrays``, ``share``/``mapped``): a worker maps the pages instead
of scanning gops.lance again (from object storage: a footer and column pages per worker) and
holding a private copy, and reads the gops.lance version the index was built from.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from robodata.errors import MissingGopsError
from robodata.format._renditions import RENDITION_COLUMN, SOURCE_COLUMN
from robodata.integrity._gop_checksums import CHECKSUM_COLUMN, ROW_CHECKSUM_COLUMN, row_problem
from robodata.reader._row_index import SharedArrays

# Row-checksummed columns the index does not otherwise need: kept compactly to check rows with.
_ROW_ONLY = ("episode_index", "camera", "gop_index", "n_frames", "width", "height", "crf", "preset")
_SHARED = "gops."  # the index's keys among the shared files of the row index
_SHARED_KEYS = f"{_SHARED}keys"  # written last: a process that finds it finds every array


class GopIndex:
    """GOPs by ref_id: row id and address, packet sizes, codec, frame times, checksums.

    >>> from robodata.reader._dataset import gop_store
    >>> gops = gop_store(ds).lance_dataset
    >>> index = GopIndex(gops)
    >>> len(index) == gops.count_rows(), index.version == gops.version
    (True, True)
    """

    def __init__(self, gops) -> None:
        columns = ["ref_id", "packet_sizes", "timestamps_ns", "codec", CHECKSUM_COLUMN]
        # Datasets without training renditions have no rendition columns (format/_renditions.py).
        with_renditions = RENDITION_COLUMN in gops.schema.names
        columns += [RENDITION_COLUMN, SOURCE_COLUMN] if with_renditions else []
        # Tables written before row checksums existed have none (integrity/_gop_checksums.py).
        has_row_checksums = ROW_CHECKSUM_COLUMN in gops.schema.names
        columns += [*_ROW_ONLY, ROW_CHECKSUM_COLUMN] if has_row_checksums else []
        table = gops.to_table(columns=columns, with_row_id=True, with_row_address=True)
        ref_ids = table["ref_id"].to_numpy()
        order = np.argsort(ref_ids, kind="stable")
        arrays: dict[str, np.ndarray] = {"version": np.array([gops.version], np.int64), "uri": np.array([gops.uri])}
        row_columns = [name for name in columns if name in _ROW_ONLY]
        row_columns += [RENDITION_COLUMN, SOURCE_COLUMN] if with_renditions else []
        for name in row_columns:
            texts, values, valid = _compact(table[name], order)
            arrays.update({f"row.{name}.values": values, f"row.{name}.valid": valid})
            if texts is not None:
                arrays[f"row.{name}.texts"] = np.array(texts, dtype=str)
        if has_row_checksums:
            arrays["row_checksums"] = table[ROW_CHECKSUM_COLUMN].to_numpy()[order]
        arrays["checksums"] = table[CHECKSUM_COLUMN].to_numpy()[order]
        arrays["ref_ids"] = ref_ids[order]
        arrays["row_ids"] = table["_rowid"].to_numpy()[order]
        arrays["row_addresses"] = table["_rowaddr"].to_numpy().astype(np.int64)[order]
        sizes = table["packet_sizes"]
        offsets = sizes.combine_chunks().offsets.to_numpy() if sizes.num_chunks else np.zeros(1, np.int64)
        values = sizes.combine_chunks().values.to_numpy() if sizes.num_chunks else np.zeros(0, np.int32)
        arrays.update(sizes_start=offsets[:-1][order], sizes_end=offsets[1:][order], sizes=values)
        # Few distinct codecs: keep one small code per GOP rather than a string each.
        codecs = table["codec"].combine_chunks().dictionary_encode()
        arrays["codec_names"] = np.array(codecs.dictionary.to_pylist(), dtype=str)
        arrays["codec_codes"] = codecs.indices.to_numpy(zero_copy_only=False)[order]
        arrays["sizes_cumsum"] = np.concatenate([[0], np.cumsum(values, dtype=np.int64)])
        # Each GOP's frame times, flat: a frame's time is one gather (FrameBatch.timestamps_ns).
        times = table["timestamps_ns"].combine_chunks() if table["timestamps_ns"].num_chunks else None
        empty = np.zeros(0, np.int64)
        arrays["times_start"] = times.offsets.to_numpy()[:-1][order] if times is not None else empty
        arrays["times_end"] = times.offsets.to_numpy()[1:][order] if times is not None else empty
        arrays["times"] = times.values.to_numpy() if times is not None else empty
        # rendition k: (source ref_ids sorted, positions of the rendition GOPs in that order)
        rendition_names: list[str] = []
        if with_renditions:
            names = table[RENDITION_COLUMN].to_numpy(zero_copy_only=False)[order]
            sources = table[SOURCE_COLUMN].fill_null(0).to_numpy()[order]  # int64, never through float
            for name in sorted({n for n in names if n is not None}):
                at = np.flatnonzero(names == name)
                source = sources[at]
                by_source = np.argsort(source, kind="stable")
                k = len(rendition_names)
                rendition_names.append(name)
                arrays.update({f"rendition.{k}.sources": source[by_source], f"rendition.{k}.positions": at[by_source]})
        arrays["rendition_names"] = np.array(rendition_names, dtype=str)
        self._load(arrays)

    def _load(self, arrays: dict[str, np.ndarray]) -> None:
        self._arrays = arrays
        self.version = int(arrays["version"][0])  # of gops.lance: the version every read of it goes to
        self._where = f"{arrays['uri'][0]} version {self.version}"
        self._row_values: dict[str, tuple[list | None, np.ndarray, np.ndarray]] = {}
        for key in arrays:
            if key.startswith("row.") and key.endswith(".values"):
                name = key.removeprefix("row.").removesuffix(".values")
                texts = arrays.get(f"row.{name}.texts")
                self._row_values[name] = (
                    None if texts is None else [str(t) for t in texts.tolist()],
                    arrays[key],
                    arrays[f"row.{name}.valid"],
                )
        self._row_checksums = arrays.get("row_checksums")
        self.has_row_checksums = self._row_checksums is not None
        self._checksums = arrays["checksums"]
        self._ref_ids = arrays["ref_ids"]
        # Rows whose checksum held, in this process: a shared index is checked again by each
        # process that maps it (its values come from files another process wrote).
        self._row_checked = np.zeros(len(self._ref_ids), dtype=bool)
        self._row_ids = arrays["row_ids"]
        self._row_addresses = arrays["row_addresses"]
        self._sizes_start, self._sizes_end, self._sizes = arrays["sizes_start"], arrays["sizes_end"], arrays["sizes"]
        self._codec_names = [str(name) for name in arrays["codec_names"].tolist()]
        self._codec_codes = arrays["codec_codes"]
        self._sizes_cumsum = arrays["sizes_cumsum"]
        self._times_start, self._times_end, self._times = arrays["times_start"], arrays["times_end"], arrays["times"]
        self._renditions: dict[str, tuple[np.ndarray, np.ndarray]] = {
            str(name): (arrays[f"rendition.{k}.sources"], arrays[f"rendition.{k}.positions"])
            for k, name in enumerate(arrays["rendition_names"].tolist())
        }

    def share(self, shared: SharedArrays) -> None:
        """Write the index into ``shared`` (a row index's files) for other processes to ``mapped``."""
        for key, array in self._arrays.items():
            shared.put(f"{_SHARED}{key}", array)
        shared.put(_SHARED_KEYS, np.array(sorted(self._arrays), dtype=str))

    @staticmethod
    def is_shared(shared: SharedArrays) -> bool:
        """Whether ``shared`` holds a GOP index (``share``)."""
        return shared.get(_SHARED_KEYS) is not None

    @classmethod
    def mapped(cls, shared: SharedArrays) -> GopIndex | None:
        """The index another process ``share``-d into ``shared``, memory-mapped (read-only, shared
        pages); None where it shared none."""
        keys = shared.get(_SHARED_KEYS)
        if keys is None:
            return None
        arrays = {}
        for key in keys.tolist():
            array = shared.get(f"{_SHARED}{key}")
            if array is None:
                raise FileNotFoundError(f"the shared GOP index in {shared.directory} has no {key!r}")
            arrays[str(key)] = array
        index = cls.__new__(cls)
        index._load(arrays)
        return index

    def unchecked_row_problems(self, positions: np.ndarray) -> list[tuple[int, str]]:
        """(position, problem) for each row at ``positions`` whose columns differ from its stored
        ``row_xxh3``; rows that held once are not hashed again (their values stay in memory)."""
        if self._row_checksums is None:
            return []
        problems = []
        for position in np.unique(positions[~self._row_checked[positions]]).tolist():
            problem = row_problem(self.row(position), int(self._row_checksums[position]))
            if problem is None:
                self._row_checked[position] = True
            else:
                problems.append((position, problem))
        return problems

    def row(self, position: int) -> dict:
        """The row-checksummed columns of the GOP at ``position``, as ``row_checksum`` takes them."""
        row: dict[str, object] = {name: _value(values, position) for name, values in self._row_values.items()}
        row.update(
            ref_id=int(self._ref_ids[position]),
            timestamps_ns=self._times[self._times_start[position] : self._times_end[position]],
            packet_sizes=self.packet_sizes(position),
            codec=self.codec(position),
            gop_xxh3=int(self._checksums[position]),
        )
        return row

    def named(self, position: int) -> tuple[int, str, int]:
        """(episode, camera, GOP index) of the GOP at ``position`` (-1, "?", -1 where not kept)."""
        if "episode_index" not in self._row_values:
            return -1, "?", -1
        episode, camera, gop = (_value(self._row_values[n], position) for n in ("episode_index", "camera", "gop_index"))
        return int(episode or 0), str(camera), int(gop or 0)

    def __len__(self) -> int:
        return len(self._ref_ids)

    def positions(self, ref_ids: np.ndarray) -> np.ndarray:
        """Positions in this index of ``ref_ids``; KeyError if any is not stored."""
        pos = np.searchsorted(self._ref_ids, ref_ids)
        pos = np.clip(pos, 0, max(len(self._ref_ids) - 1, 0))
        if len(self._ref_ids) == 0 or (self._ref_ids[pos] != ref_ids).any():
            missing = ref_ids if len(self._ref_ids) == 0 else ref_ids[self._ref_ids[pos] != ref_ids]
            raise MissingGopsError(
                f"{self._where}: {len(missing)} GOPs the rows point at are not stored (ref_ids "
                f"{', '.join(map(str, missing[:5].tolist()))}{', ...' if len(missing) > 5 else ''}): the table is damaged "
                "or changed outside robodata; `robodata verify` lists the rows; restore gops.lance from a copy "
                "(a backup or a replica)"
            )
        return pos

    def rendition_positions(self, ref_ids: np.ndarray, name: str) -> np.ndarray:
        """Positions of rendition ``name`` of the full-resolution GOPs ``ref_ids``; -1 where a
        GOP has no such rendition stored (yet)."""
        sources, positions = self._renditions.get(name, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        found = np.full(len(ref_ids), -1, dtype=np.int64)
        if len(sources):
            at = np.clip(np.searchsorted(sources, ref_ids), 0, len(sources) - 1)
            hit = sources[at] == ref_ids
            found[hit] = positions[at[hit]]
        return found

    @property
    def rendition_names(self) -> list[str]:
        return sorted(self._renditions)

    def ref_ids(self, positions: np.ndarray) -> np.ndarray:
        return self._ref_ids[positions]

    def checksums(self, positions: np.ndarray) -> np.ndarray:
        """The stored xxh3-64 of each GOP at ``positions``."""
        return self._checksums[positions]

    def row_ids(self, positions: np.ndarray) -> np.ndarray:
        return self._row_ids[positions]

    def row_addresses(self, positions: np.ndarray) -> np.ndarray:
        """Row address (fragment << 32 | offset) of each GOP at ``positions``."""
        return self._row_addresses[positions]

    def packet_sizes(self, position: int) -> np.ndarray:
        return self._sizes[self._sizes_start[position] : self._sizes_end[position]]

    def codec(self, position: int) -> str:
        """The codec (FFmpeg decoder name) the GOP at ``position`` was stored in."""
        return self._codec_names[self._codec_codes[position]]

    def frame_timestamps(self, positions: np.ndarray, frames_in_gop: np.ndarray) -> np.ndarray:
        """Capture time (ns) of frame ``frames_in_gop[i]`` of the GOP at ``positions[i]``."""
        return self._times[self._times_start[positions] + frames_in_gop]

    def byte_sizes(self, positions: np.ndarray) -> np.ndarray:
        """Total bytes of each GOP at ``positions`` (the sum of its packet sizes)."""
        return self._sizes_cumsum[self._sizes_end[positions]] - self._sizes_cumsum[self._sizes_start[positions]]


def _compact(column: pa.ChunkedArray, order: np.ndarray) -> tuple[list | None, np.ndarray, np.ndarray]:
    """A column in index order as (distinct texts or None for integers, values or text codes,
    which rows are not null): small, and integers never pass through float."""
    array = column.combine_chunks()
    valid = array.is_valid().to_numpy(zero_copy_only=False)[order]
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        encoded = array.dictionary_encode()
        return encoded.dictionary.to_pylist(), encoded.indices.fill_null(0).to_numpy()[order], valid
    return None, array.fill_null(0).to_numpy()[order], valid


def _value(column: tuple[list | None, np.ndarray, np.ndarray], position: int) -> str | int | None:
    texts, values, valid = column
    if not valid[position]:
        return None
    return int(values[position]) if texts is None else texts[int(values[position])]
