"""The in-memory lookup from a GOP's ref_id to where its bytes live and how to cut its packets.

Loaded once per open dataset (one scan of gops.lance's small columns); after that a frame read
costs only the GOP's own bytes.
"""

from __future__ import annotations

import numpy as np

from robodata.errors import MissingGopsError
from robodata.format._renditions import RENDITION_COLUMN, SOURCE_COLUMN
from robodata.integrity._gop_checksums import CHECKSUM_COLUMN


class GopIndex:
    def __init__(self, gops) -> None:
        columns = ["ref_id", "packet_sizes", "timestamps_ns", "codec", CHECKSUM_COLUMN]
        # Datasets without training renditions have no rendition columns (format/_renditions.py).
        with_renditions = RENDITION_COLUMN in gops.schema.names
        columns += [RENDITION_COLUMN, SOURCE_COLUMN] if with_renditions else []
        table = gops.to_table(columns=columns, with_row_id=True)
        self._where = f"{gops.uri} version {gops.version}"
        ref_ids = table["ref_id"].to_numpy()
        order = np.argsort(ref_ids, kind="stable")
        self._checksums = table[CHECKSUM_COLUMN].to_numpy()[order]
        self._ref_ids = ref_ids[order]
        self._row_ids = table["_rowid"].to_numpy()[order]
        sizes = table["packet_sizes"]
        offsets = sizes.combine_chunks().offsets.to_numpy() if sizes.num_chunks else np.zeros(1, np.int64)
        values = sizes.combine_chunks().values.to_numpy() if sizes.num_chunks else np.zeros(0, np.int32)
        self._sizes_start = offsets[:-1][order]
        self._sizes_end = offsets[1:][order]
        self._sizes = values
        # Few distinct codecs: keep one small code per GOP rather than a string each.
        codecs = table["codec"].combine_chunks().dictionary_encode()
        self._codec_names = codecs.dictionary.to_pylist()
        self._codec_codes = codecs.indices.to_numpy(zero_copy_only=False)[order]
        self._sizes_cumsum = np.concatenate([[0], np.cumsum(values, dtype=np.int64)])
        # Each GOP's frame times, flat: a frame's time is one gather (FrameBatch.timestamps_ns).
        times = table["timestamps_ns"].combine_chunks() if table["timestamps_ns"].num_chunks else None
        self._times_start = times.offsets.to_numpy()[:-1][order] if times is not None else np.zeros(0, np.int64)
        self._times = times.values.to_numpy() if times is not None else np.zeros(0, np.int64)
        # rendition name -> (source ref_ids sorted, positions of the rendition GOPs in that order)
        self._renditions: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if with_renditions:
            names = table[RENDITION_COLUMN].to_numpy(zero_copy_only=False)[order]
            sources = table[SOURCE_COLUMN].fill_null(0).to_numpy()[order]  # int64, never through float
            for name in {n for n in names if n is not None}:
                at = np.flatnonzero(names == name)
                source = sources[at]
                by_source = np.argsort(source, kind="stable")
                self._renditions[name] = (source[by_source], at[by_source])

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
