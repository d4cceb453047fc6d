"""State, action and label bands of an episode as one matplotlib figure rendered to inline SVG,
with the geometry a page needs to draw a playback cursor over it."""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from robodata.errors import import_extra
from robodata.view._episode_rows import SEGMENT_COLUMNS, EpisodeRows

if TYPE_CHECKING:
    from matplotlib.patches import Patch

# Colours people read without a legend: red for an intervention, blue a human, green a policy.
KNOWN_COLOURS = {"intervention": "#d62728", "human": "#1f77b4", "policy": "#2ca02c"}
PALETTE = ["#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f", "#aec7e8"]
# A label column with more distinct values than this is drawn as a line, not as bands.
MAX_BAND_VALUES = 12
LEFT, RIGHT = 0.09, 0.80


@dataclass
class Segment:
    """Rows ``[start, stop)`` of one label column holding ``value``."""

    start: int
    stop: int
    value: str


@dataclass
class EpisodePlot:
    """The SVG, and where its time axis lies as fractions of the figure (from its top-left)."""

    svg: str
    left: float
    right: float
    top: float
    bottom: float


def label_segments(values: list) -> list[Segment]:
    """Runs of equal values, skipping nulls and False (a bool label marks where it holds).

    >>> label_segments(["a", "a", None, "b"])
    [Segment(start=0, stop=2, value='a'), Segment(start=3, stop=4, value='b')]
    """
    segments: list[Segment] = []
    for i, value in enumerate(values):
        if value is None or value is False:
            continue
        text = str(value)
        if segments and segments[-1].stop == i and segments[-1].value == text:
            segments[-1].stop = i + 1
        else:
            segments.append(Segment(i, i + 1, text))
    return segments


def band_columns(rows: EpisodeRows) -> list[str]:
    """The columns shown as bands: source, is_intervention, then every annotation column."""
    return [c for c in (*SEGMENT_COLUMNS, *rows.label_columns) if c in rows.table.column_names]


def intervention_segments(rows: EpisodeRows) -> list[Segment]:
    """Where a person took over: ``is_intervention`` rows, or ``source == "intervention"``."""
    flags = np.zeros(rows.table.num_rows, dtype=bool)
    if "is_intervention" in rows.table.column_names:
        flags |= np.asarray(rows.table["is_intervention"].fill_null(False).to_numpy(zero_copy_only=False), bool)
    if "source" in rows.table.column_names:
        flags |= np.asarray([v == "intervention" for v in rows.table["source"].to_pylist()])
    return label_segments([True if f else None for f in flags])


def episode_plot(rows: EpisodeRows, joint_names: list[str]) -> EpisodePlot:
    """State and action over time, interventions shaded, one band row per label column.

    >>> from robodata.view._episode_rows import load_episode
    >>> episode_plot(load_episode(ds, 0), ds.metadata.joint_names).svg[:4]
    '<?xm'
    """
    matplotlib = import_extra("matplotlib", "plots", "an episode page's plots")
    from matplotlib.figure import Figure

    bands = band_columns(rows)
    heights = [3.0, 3.0] + [0.45] * len(bands)
    fig = Figure(figsize=(12, sum(heights) + 1.1), dpi=100)
    fig.subplots_adjust(
        left=LEFT, right=RIGHT, top=1 - 0.25 / fig.get_figheight(), bottom=0.6 / fig.get_figheight(), hspace=0.15
    )
    grid = fig.add_gridspec(len(heights), 1, height_ratios=heights)
    axes = [fig.add_subplot(grid[0])]
    axes += [fig.add_subplot(grid[i], sharex=axes[0]) for i in range(1, len(heights))]
    t, duration = rows.seconds, rows.duration
    interventions = intervention_segments(rows)
    for ax, name, title in ((axes[0], "observation_state", "state"), (axes[1], "action", "action")):
        values = rows.column(name)
        for j in range(values.shape[1]):
            label = joint_names[j] if j < len(joint_names) else f"joint {j}"
            ax.plot(t, values[:, j], linewidth=0.9, label=label, drawstyle="steps-post")
        for segment in interventions:
            ax.axvspan(*_span(rows, segment), color=KNOWN_COLOURS["intervention"], alpha=0.12, linewidth=0)
        ax.set_ylabel(title)
        ax.grid(alpha=0.3)
    axes[0].legend(
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=7,
        ncol=1 + len(joint_names) // 16,
        frameon=False,
        title="joints",
        title_fontsize=8,
    )
    handles = []
    palette = itertools.cycle(PALETTE)  # shared: no two columns' values look alike
    for ax, column in zip(axes[2:], bands, strict=True):
        handles += _band_row(ax, rows, column, palette)
    if handles:
        axes[-1].legend(handles=handles, loc="lower left", bbox_to_anchor=(1.01, 0.0), fontsize=7, frameon=False)
    for ax in axes[:-1]:
        ax.tick_params(labelbottom=False)
    axes[0].set_xlim(0, duration)
    axes[-1].set_xlabel("seconds since the episode's first row")
    top = 1 - axes[0].get_position().y1
    bottom = 1 - axes[-1].get_position().y0
    buffer = io.StringIO()
    # Text as paths: the page needs no fonts; a fixed hash salt keeps the SVG reproducible.
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "robodata-view"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return EpisodePlot(buffer.getvalue(), LEFT, RIGHT, top, bottom)


def _band_row(ax, rows: EpisodeRows, column: str, palette: Iterator[str]) -> list[Patch]:
    from matplotlib.patches import Patch

    values = rows.table[column].to_pylist()
    ax.set_yticks([])
    ax.set_ylabel(column, rotation=0, ha="right", va="center", fontsize=8)
    distinct = sorted({str(v) for v in values if v is not None and v is not False})
    numeric = pa.types.is_integer(rows.table[column].type) or pa.types.is_floating(rows.table[column].type)
    if numeric and len(distinct) > MAX_BAND_VALUES:
        # A continuous label (e.g. a progress estimate): its curve fits the band's height.
        y = np.asarray([np.nan if v is None else float(v) for v in values])
        low, high = np.nanmin(y), np.nanmax(y)
        ax.plot(rows.seconds, (y - low) / ((high - low) or 1.0), color="#444", linewidth=0.9)
        ax.set_ylim(-0.1, 1.1)
        return []
    if column == "is_intervention":
        colours = {"True": KNOWN_COLOURS["intervention"]}
    else:
        colours = {v: KNOWN_COLOURS.get(v) or next(palette) for v in distinct[:MAX_BAND_VALUES]}
    for segment in label_segments(values):
        start, stop = _span(rows, segment)
        ax.axvspan(start, stop, color=colours.get(segment.value, "#7f7f7f"), alpha=0.8, linewidth=0)
    return [Patch(color=colours[v], label=f"{column} = {v}") for v in distinct[:MAX_BAND_VALUES]]


def _span(rows: EpisodeRows, segment: Segment) -> tuple[float, float]:
    stop = rows.seconds[segment.stop] if segment.stop < len(rows.seconds) else rows.duration
    return float(rows.seconds[segment.start]), float(stop)
