"""One episode as a self-contained HTML page: every camera as an inline H.264 video playing in
sync, state and action plotted under a cursor that follows playback, labels and interventions
as coloured bands, the task, the language instruction and the dataset version."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from robodata.reader import RoboDataset, open_dataset
from robodata.storage import fsspec_filesystem, is_remote, join_uri, safe_uri
from robodata.storage._failures import storage_call
from robodata.view._episode_rows import EpisodeRows, camera_frames, decoded_frames, load_episode
from robodata.view._player import PAGE_CSS, PLAYER_JS
from robodata.view._plots import band_columns, episode_plot, label_segments
from robodata.view._video import browser_mp4

VIEWS_FOLDER = "views"


def episode_page(
    uri: str, episode: int, *, version: int | str | None = None, storage_options: dict | None = None
) -> str:
    """The HTML page of ``episode`` in the dataset at ``uri`` (``version``: a number, a tag or the
    latest).

    >>> page = episode_page("data/demo", 0)
    >>> page.lstrip().lower().startswith("<!doctype html>"), "episode 0" in page
    (True, True)
    """
    ds = open_dataset(uri, version=version, storage_options=storage_options)
    return render_episode_page(ds, episode)


def render_episode_page(ds: RoboDataset, episode: int) -> str:
    """``episode_page`` for a dataset already opened at the version to show."""
    rows = load_episode(ds, episode)
    cameras = "\n".join(_camera_figure(ds, rows, camera) for camera in ds.cameras)
    plot = episode_plot(rows, ds.metadata.joint_names)
    svg = plot.svg[plot.svg.index("<svg") :]
    data = {
        "seconds": [round(float(s), 6) for s in rows.seconds],
        "duration": rows.duration,
        "bands": {
            column: [[s.start, s.stop, s.value] for s in label_segments(rows.table[column].to_pylist())]
            for column in band_columns(rows)
        },
        "cursor": {"left": plot.left, "right": plot.right, "top": plot.top, "bottom": plot.bottom},
    }
    # "</" inside a <script> block would end it early.
    data_json = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    title = f"episode {episode} of {safe_uri(ds.uri)} (version {ds.version})"
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="robodata view">
<title>{html.escape(title)}</title>
<style>{PAGE_CSS}</style>
</head>
<body data-ready="false" data-episode="{episode}" data-version="{ds.version}">
<header>
<h1>Episode {episode} <span class="task">{html.escape(rows.task)}</span></h1>
<p class="instruction" id="instruction">{html.escape(rows.language_instruction) or "(no language instruction)"}</p>
<dl class="facts">{_facts(ds, rows)}</dl>
</header>
<section id="cameras">
{cameras}
</section>
<section id="controls">
<button id="play" type="button">&#9654; play</button>
<input id="scrub" type="range" min="0" max="{len(rows.seconds) - 1}" step="1" value="0" aria-label="row">
<select id="speed" aria-label="speed">
<option value="0.25">0.25&times;</option><option value="0.5">0.5&times;</option>
<option value="1" selected>1&times;</option><option value="2">2&times;</option>
</select>
<output id="clock"></output>
</section>
<section id="now"></section>
<section id="plot"><div class="frame">{svg}<div id="cursor"></div></div></section>
<script type="application/json" id="episode-data">{data_json}</script>
<script>{PLAYER_JS}</script>
</body>
</html>
"""


def episode_page_uri(root: str, episode: int) -> str:
    """Where ``write_episode_page`` puts an episode's page by default: ``<root>/views/``."""
    return join_uri(root, VIEWS_FOLDER, f"episode_{episode:06d}.html")


def write_episode_page(
    uri: str,
    episode: int,
    out: str | None = None,
    *,
    version: int | str | None = None,
    storage_options: dict | None = None,
) -> str:
    """Write ``episode``'s page to ``out`` (a path or s3://; default ``<uri>/views/``) and return
    where it went. A local page appears whole or not at all.

    >>> write_episode_page("data/demo", 0)  # beside the dataset by default
    'data/demo/views/episode_000000.html'
    """
    page = episode_page(uri, episode, version=version, storage_options=storage_options).encode()
    out = out or episode_page_uri(uri, episode)
    if is_remote(out):
        put = fsspec_filesystem(out, storage_options).pipe_file
        storage_call(
            f"writing episode {episode}'s page", out, storage_options, put, out, page
        )  # one PUT: whole or nothing
        return out
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(page)
    partial.replace(path)
    return str(path)


def _camera_figure(ds: RoboDataset, rows: EpisodeRows, camera: str) -> str:
    frames = camera_frames(ds, rows, camera)
    mp4 = browser_mp4(decoded_frames(ds, frames), frames.seconds, rows.duration)
    info = ds.metadata.cameras[camera]
    facts = [camera, f"{info.width}\u00d7{info.height}", f"{info.fps:g} fps", f"{len(frames.offsets)} frames"]
    caption = " \u00b7 ".join(facts)
    name = html.escape(camera, quote=True)
    return (
        f'<figure class="camera" data-camera="{name}" data-frames="{len(frames.offsets)}">'
        f'<video muted playsinline preload="auto" src="data:video/mp4;base64,{base64.b64encode(mp4).decode()}">'
        f"</video><figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def _facts(ds: RoboDataset, rows: EpisodeRows) -> str:
    tags = sorted(name for name, version in ds.tags.items() if version == ds.version)
    facts = {
        "dataset": safe_uri(ds.uri),
        "version": str(ds.version) + (f" (tag {', '.join(tags)})" if tags else ""),
        "rows": str(len(rows.seconds)),
        "duration": f"{rows.duration:.2f} s",
        "control rate": f"{ds.metadata.control_hz:g} Hz",
        "robot": ds.metadata.robot_type or "\u2014",
        "labels": ", ".join(rows.label_columns) or "\u2014",
    }
    return "".join(
        f'<div data-fact="{html.escape(k, quote=True)}"><dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd></div>'
        for k, v in facts.items()
    )
