"""Figures as a Markdown report that names the dataset version measured, and where that report
is written: ``<dataset root>/reports/<name>.md``."""

from __future__ import annotations

import lance

from robodata.storage import fsspec_filesystem, is_remote, join_uri
from robodata.storage._failures import storage_call

REPORTS_DIR = "reports"


def format_table(figures: dict[str, object]) -> str:
    """The figures as a Markdown table, one row per figure (floats with two decimals).

    >>> print(format_table({"single_frame_fps": 310.0, "column": "observation_images_top"}))
    | measure | value |
    | --- | --- |
    | single_frame_fps | 310.00 |
    | column | observation_images_top |
    """
    lines = ["| measure | value |", "| --- | --- |"]
    for key, value in figures.items():
        shown = f"{value:,.2f}" if isinstance(value, float) else str(value)
        lines.append(f"| {key} | {shown} |")
    return "\n".join(lines)


def figures_markdown(title: str, figures: dict[str, object], dataset_version: int) -> str:
    """A Markdown report: the title, the version measured (and pylance's), one row per figure."""
    measured = f"Measured on frames.lance version {dataset_version} with pylance {lance.__version__}."
    return f"# {title}\n\n{measured}\n\n{format_table(figures)}\n"


def write_report(dataset_uri: str, name: str, markdown: str, storage_options: dict | None = None) -> str:
    """Write ``markdown`` to ``<dataset_uri>/reports/<name>.md`` (local or s3://) and return its URI."""
    uri = join_uri(dataset_uri, REPORTS_DIR, f"{name}.md")
    fs = fsspec_filesystem(uri, storage_options)
    if not is_remote(uri):
        storage_call(
            "creating the reports folder", uri, storage_options, fs.makedirs, uri.rsplit("/", 1)[0], exist_ok=True
        )
    storage_call("writing the report", uri, storage_options, fs.pipe_file, uri, markdown.encode())
    return uri
