"""How fast a dataset version reads here: the figures the ``benchmark_report`` asset reports,
measured on your own data and machine (the comparison against LeRobot and LanceDB lives in the
source checkout's ``benchmarks/``).

- ``measure_reads``: every figure below in one dict, for the current (or a given) version.
- ``read_path_figures``: random single-frame and batched reads of one camera and whole rows,
  each against the decode bound (sequential decode frames/s x 2/(G+1)), and what GOP checksums add.
- ``window_figures``: ``get_windows`` of consecutive frames x every camera.
- ``batches_decode_bound``: the least decoding any reader of given batches of rows must do, timed.
- ``loader_figures``: the numpy training loader's samples/s (``robodata.torch.TrainingLoader``).
- ``figures_markdown`` / ``write_report``: the figures as Markdown, written to ``<root>/reports/``.

>>> from robodata.measure import measure_reads
>>> figures = measure_reads("data/demo", samples=4, batch_size=4, loader_samples=16)
>>> figures["dataset_version"], figures["decode_bound_fps"] > 0, figures["loader_samples_per_s"] > 0
(3, True, True)
"""

from __future__ import annotations

from typing import Any

from robodata.measure._decode_bound import batches_decode_bound
from robodata.measure._read_path import largest_camera_column, read_path_figures, sequential_decode_fps
from robodata.measure._report import figures_markdown, format_table, write_report
from robodata.measure._training_reads import (
    camera_frame_offsets,
    every_epoch,
    loader_figures,
    time_batches,
    window_figures,
)
from robodata.reader import open_dataset


def measure_reads(
    uri: str,
    *,
    version: int | str | None = None,
    storage_options: dict | None = None,
    samples: int = 200,
    batch_size: int = 64,
    window_frames: int = 8,
    loader_samples: int = 512,
    progress: bool = False,
) -> dict[str, Any]:
    """The read figures of one version of the dataset at ``uri`` (default: the current one), on
    its largest camera: ``read_path_figures``, ``window_figures`` (``window_frames`` frames) and
    ``loader_figures`` (``batch_size`` rows a batch, ``loader_samples`` samples), in one dict."""
    ds = open_dataset(uri, version=version, storage_options=storage_options)
    column = largest_camera_column(ds)
    figures = read_path_figures(ds, samples=samples, batch_size=batch_size, column=column, progress=progress)
    figures.update(window_figures(ds, samples=samples, frames=window_frames, column=column))
    figures.update(
        loader_figures(
            uri, version=ds.version, storage_options=storage_options, batch_size=batch_size, samples=loader_samples
        )
    )
    return figures


__all__ = [
    "batches_decode_bound",
    "camera_frame_offsets",
    "every_epoch",
    "figures_markdown",
    "format_table",
    "largest_camera_column",
    "loader_figures",
    "measure_reads",
    "read_path_figures",
    "sequential_decode_fps",
    "time_batches",
    "window_figures",
    "write_report",
]
