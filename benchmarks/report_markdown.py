"""Benchmark figures as a Markdown table that names the dataset version measured, and where
that report is written: ``<dataset root>/reports/``."""

from __future__ import annotations

import lance

from benchmarks.readpath import format_table
from robodata.storage import fsspec_filesystem, is_remote, join_uri

REPORTS_DIR = "reports"


def figures_markdown(title: str, figures: dict[str, float], dataset_version: int) -> str:
    """A Markdown report: the title, the Lance versions measured, one table row per figure.

    >>> print(figures_markdown("Read path", {"single_frame_fps": 310.0}, 7))  # doctest: +SKIP
    """
    measured = f"Measured on frames.lance version {dataset_version} with pylance {lance.__version__}."
    return f"# {title}\n\n{measured}\n\n{format_table(figures)}\n"


def write_report(dataset_uri: str, name: str, markdown: str, storage_options: dict | None = None) -> str:
    """Write ``markdown`` to ``<dataset_uri>/reports/<name>.md`` and return its URI.

    >>> write_report("data/demo", "readpath_v7", "# Read path\\n")  # doctest: +SKIP
    'data/demo/reports/readpath_v7.md'
    """
    uri = join_uri(dataset_uri, REPORTS_DIR, f"{name}.md")
    fs = fsspec_filesystem(uri, storage_options)
    if not is_remote(uri):
        fs.makedirs(uri.rsplit("/", 1)[0], exist_ok=True)
    fs.pipe_file(uri, markdown.encode())
    return uri
