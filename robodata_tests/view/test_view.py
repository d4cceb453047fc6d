"""`robodata view`: the page of an episode holds every camera as H.264 at its rows' times, the
plots and bands, the task and the version; headless Chromium plays it in sync; --serve serves it."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import av
import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

import robodata
from robodata.cli import main
from robodata.codec._quality import psnr
from robodata.format._schema import image_column, ref_columns
from robodata.view import episode_page
from robodata_tests.view.browser import WINDOW, Chromium, attributes, box

EPISODE = 1
ROW = 120  # a row well inside the 2-second episode, and inside its "success" label


@pytest.fixture(scope="module")
def labelled(ingested, tmp_path_factory) -> str:
    """The three sample episodes tagged "plain", then two label columns added. Read-only."""
    root = str(tmp_path_factory.mktemp("view") / "ds")
    shutil.copytree(ingested, root)
    robodata.open(root).tag("plain")
    keys = robodata.open(root).to_table(columns=["episode_index", "frame_index"])
    frame = keys["frame_index"].to_numpy()
    labels = pa.table(
        {
            "episode_index": keys["episode_index"],
            "frame_index": keys["frame_index"],
            "success": pa.array(frame >= 100),
            "phase": pa.array(np.where(frame < 60, "reach", "grasp")),
        }
    )
    robodata.add_annotations(root, labels)
    return root


def episode_rows(ds, episode: int) -> np.ndarray:
    """Dataset row offsets of ``episode`` in frame order, found without the viewer's code."""
    keys = ds.to_table(columns=["episode_index", "frame_index"])
    mine = np.flatnonzero(keys["episode_index"].to_numpy() == episode)
    return mine[np.argsort(keys["frame_index"].to_numpy()[mine])]


def first_rows_of_each_frame(ds, rows: np.ndarray, camera: str) -> np.ndarray:
    ref_id, _, in_gop = ref_columns(camera)
    table = ds.lance_dataset.take(rows.tolist(), columns=[ref_id, in_gop])
    pairs = list(zip(table[ref_id].to_pylist(), table[in_gop].to_pylist(), strict=True))
    return np.asarray([i for i in range(len(pairs)) if i == 0 or pairs[i] != pairs[i - 1]])


def page_data(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="episode-data">(.*?)</script>', page).group(1))


def camera_video(page: str, camera: str) -> bytes:
    match = re.search(rf'data-camera="{camera}"[^>]*><video[^>]*src="data:video/mp4;base64,([^"]+)"', page)
    return base64.b64decode(match.group(1))


def test_each_camera_is_h264_with_one_frame_per_camera_frame_at_its_rows_time(labelled):
    ds = robodata.open(labelled)
    page = episode_page(labelled, EPISODE)
    rows = episode_rows(ds, EPISODE)
    stamps = ds.lance_dataset.take(rows.tolist(), columns=["timestamp_ns"])["timestamp_ns"].to_numpy()
    seconds = (stamps - stamps[0]) / 1e9
    assert len(ds.cameras) == 3
    for camera in ds.cameras:
        starts = first_rows_of_each_frame(ds, rows, camera)
        with av.open(io.BytesIO(camera_video(page, camera))) as container:
            stream = container.streams.video[0]
            assert (stream.codec_context.name, stream.pix_fmt) == ("h264", "yuv420p")
            decoded = [(float(f.pts * f.time_base), f.to_ndarray(format="rgb24")) for f in container.decode(stream)]
            assert container.duration / 1e6 == pytest.approx(seconds[-1] + 0.01, abs=1e-3)
        assert len(decoded) == len(starts) > 50
        assert [t for t, _ in decoded] == pytest.approx(seconds[starts].tolist(), abs=1e-4)
        # The pixels are the frames robodata's reader returns for those rows (re-encoded once).
        column = image_column(camera)
        for k in (0, len(starts) // 2, len(starts) - 1):
            expected = ds.get_frames(rows[starts[k : k + 1]], cameras=column)[column][0]
            assert psnr(expected, decoded[k][1]) > 30


def test_page_states_the_episode_its_version_and_labels_as_bands(labelled):
    ds = robodata.open(labelled)
    page = episode_page(labelled, EPISODE)
    data = page_data(page)
    rows = episode_rows(ds, EPISODE)
    first = ds.lance_dataset.take([int(rows[0])], columns=["task", "language_instruction"]).to_pylist()[0]
    assert f'data-episode="{EPISODE}" data-version="{ds.version}"' in page
    assert f'<h1>Episode {EPISODE} <span class="task">{first["task"]}</span></h1>' in page
    assert f'<p class="instruction" id="instruction">{first["language_instruction"]}</p>' in page
    assert len(data["seconds"]) == len(rows) and data["duration"] == pytest.approx(len(rows) / 100)
    assert list(data["bands"]) == ["source", "is_intervention", "success", "phase"]
    assert data["bands"]["success"] == [[100, len(rows), "True"]]
    assert data["bands"]["phase"] == [[0, 60, "reach"], [60, len(rows), "grasp"]]
    source = ds.lance_dataset.take(rows.tolist(), columns=["source"])["source"].to_pylist()
    covered = [value for start, stop, value in data["bands"]["source"] for _ in range(start, stop)]
    assert covered == source
    # One SVG figure: state, action, and a band row per label column, text drawn as paths.
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert svg.count("<text") == 0 and svg.count("<path") > 100

    older = episode_page(labelled, EPISODE, version="plain")
    assert f'data-version="{robodata.open(labelled, version="plain").version}"' in older
    assert list(page_data(older)["bands"]) == ["source", "is_intervention"]


def test_a_missing_episode_is_named_with_the_episodes_there(labelled, tmp_path, capsys):
    with pytest.raises(ValueError, match=r"no episode 7 at version \d+ \(episodes: 0, 1, 2\)"):
        episode_page(labelled, 7)
    assert main(["view", labelled, "--episode", "7", "--out", str(tmp_path / "page.html")]) == 2
    assert capsys.readouterr().err.startswith(f"robodata view: {labelled}: no episode 7")
    assert not (tmp_path / "page.html").exists()


def assert_cameras_show_row(ds, figures: dict, pixels: np.ndarray, row: int) -> None:
    """Every camera's box in the screenshot shows the frame robodata decodes for ``row``: far
    closer to it than to the frame of a row a second away."""
    rows = episode_rows(ds, EPISODE)
    other = row - 100 if row >= 100 else row + 100
    for camera, figure in figures.items():
        x, y, w, h = box(figure)
        shown = pixels[y : y + h, x : x + w].astype(np.float64)
        assert shown.std() > 20  # a picture, not a blank or single-colour box
        column = image_column(camera)
        frames = ds.get_frames([int(rows[row]), int(rows[other])], cameras=column)[column]
        right, wrong = (float(np.abs(np.asarray(Image.fromarray(f).resize((w, h))) - shown).mean()) for f in frames)
        assert right < 12 and right * 2 < wrong, (camera, row, right, wrong)


# Where each camera's video is on the page now (as the player's data-box records it at ready).
ON_SCREEN = """JSON.stringify(Object.fromEntries([...document.querySelectorAll('figure.camera')].map((f) => {
  const r = f.querySelector('video').getBoundingClientRect();
  return [f.dataset.camera, {'data-box': [r.left + scrollX, r.top + scrollY, r.width, r.height].map(Math.round).join(',')}];
})))"""

# Each time the last camera's seek ends (no camera seeking): whether the player plays, whether
# every video is paused, and how far apart their times are. Recorded by the page's own "seeked"
# events, so a loaded machine, where some camera is nearly always seeking, still records them.
RECORD_SPREADS = """(() => {
  window.spreads = [];
  const vs = [...document.querySelectorAll('video')];
  for (const v of vs) v.addEventListener('seeked', () => {
    if (vs.some((x) => x.seeking)) return;
    const ts = vs.map((x) => x.currentTime);
    window.spreads.push({
      playing: document.getElementById('play').textContent.includes('pause'),
      paused: vs.every((x) => x.paused),
      spread: Math.max(...ts) - Math.min(...ts),
    });
  });
})()"""


# The play button pauses only while the player plays (its label then says pause); run as one
# script, so the player's clock cannot end the episode between the look and the click.
PAUSE = """(() => {
  const button = document.getElementById('play');
  if (button.textContent.includes('pause')) button.click();
})()"""


@pytest.mark.slow
def test_chromium_plays_every_camera_in_sync_with_the_plot_cursor(labelled, tmp_path, capsys):
    page = tmp_path / "episode.html"
    assert main(["view", labelled, "--episode", str(EPISODE), "--out", str(page)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote episode {EPISODE} to {page}"
    with Chromium() as browser:
        tab = browser.open(f"{page.as_uri()}#row={ROW}")
        tab.wait_until("(document.body?.dataset.ready ?? 'false') !== 'false'")
        tab.wait_until("[...document.querySelectorAll('video')].every(v => !v.seeking && v.readyState >= 2)")
        dom, pixels = tab.dom(), tab.settled_screenshot()
        shown_at = json.loads(tab.evaluate(ON_SCREEN))
        # Play for a while, then pause: every video seeks to the clock's row. Playing, the videos
        # do not run by themselves: each is seeked to the one clock, so no camera drifts.
        tab.evaluate(RECORD_SPREADS)
        tab.evaluate("document.getElementById('play').click()")
        tab.wait_until(f"Number(document.body.dataset.row) > {ROW + 30}")
        spreads = tab.evaluate("window.spreads")
        # Pause, unless the clock reached the episode's end and paused itself meanwhile (a click
        # then would play it again from row 0).
        tab.evaluate(PAUSE)
        tab.wait_until("[...document.querySelectorAll('video')].every(v => v.paused && !v.seeking)")
        played_to, after_play = int(tab.evaluate("document.body.dataset.row")), tab.settled_screenshot()
        shown_after = json.loads(tab.evaluate(ON_SCREEN))
    Image.fromarray(pixels).save(tmp_path / "screenshot.png")  # kept for a person to look at
    ds = robodata.open(labelled)
    [body] = attributes(dom, "body")
    assert (body["data-ready"], body["data-cameras-ready"], body["data-row"]) == ("true", "3", str(ROW))
    figures = {f["data-camera"]: f for f in attributes(dom, "figure", class_="camera")}
    assert sorted(figures) == ds.cameras
    for camera, figure in figures.items():
        info = ds.metadata.cameras[camera]
        assert figure["data-decoded"] == f"{info.width}x{info.height}"
    [plot] = attributes(dom, "div", class_="frame")
    assert '<section id="now"><span>source: ' in dom and "<span>success: True</span><span>phase: grasp</span>" in dom

    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
    # The screenshot is compared where the videos are when it is taken (a layout that moved after
    # ready would make the recorded boxes point beside them).
    assert_cameras_show_row(ds, shown_at, pixels, ROW)
    assert played_to > ROW + 30
    while_playing = [s for s in spreads if s["playing"]]
    assert while_playing and all(s["paused"] for s in while_playing)  # driven by the clock, not playing alone
    assert max(s["spread"] for s in while_playing) == 0  # every camera at the same time
    assert_cameras_show_row(ds, shown_after, after_play, played_to)
    x, y, w, h = box(plot)
    plot_pixels = pixels[y : y + h, x : x + w]
    assert (plot_pixels.min(axis=2) < 128).mean() > 0.02  # lines and bands were drawn
    # The cursor: a dark column across the axes at the row's time.
    data = page_data(page.read_text())
    cursor, t = data["cursor"], data["seconds"][ROW] / data["duration"]
    column_x = round(w * (cursor["left"] + (cursor["right"] - cursor["left"]) * t))
    top, bottom = round(h * cursor["top"]) + 2, round(h * cursor["bottom"]) - 2
    dark = plot_pixels[top:bottom, column_x - 1 : column_x + 2].max(axis=2).min(axis=1) < 80
    assert dark.mean() > 0.95


@pytest.mark.slow
def test_serve_answers_on_loopback_until_interrupted(labelled, capsys):
    # -X faulthandler: if the server ever fails to exit, SIGABRT makes it print every thread's stack.
    command = [
        sys.executable,
        "-X",
        "faulthandler",
        "-m",
        "robodata.cli",
        "view",
        labelled,
        "--episode",
        "0",
        "--serve",
    ]
    # A shell's background job (CI started with `&`) ignores SIGINT, and an ignored signal stays
    # ignored across exec: give the server the terminal's default, as when a user runs it.
    server = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        line = server.stdout.readline()
        match = re.fullmatch(r"serving episode 0 at (http://127\.0\.0\.1:(\d+)/) \(Ctrl-C stops\)\n", line)
        assert match, line + server.stderr.read() if server.poll() is not None else line
        url = match.group(1)
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.headers["Content-Type"] == "text/html; charset=utf-8"
            page = response.read().decode()
        assert '<body data-ready="false" data-episode="0"' in page
        assert page.count('<figure class="camera"') == 3
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(url + "secrets.txt", timeout=30)
        assert missing.value.code == 404
        # A second server cannot take the same port: one line, exit 2.
        assert main(["view", labelled, "--episode", "0", "--serve", "--port", match.group(2)]) == 2
        assert (
            capsys.readouterr().err == f"robodata view: cannot serve on 127.0.0.1:{match.group(2)}: "
            "Address already in use\n"
        )
        server.send_signal(signal.SIGINT)
        try:
            assert server.wait(timeout=60) == 0
        except subprocess.TimeoutExpired:
            server.send_signal(signal.SIGABRT)
            pytest.fail(f"view --serve did not exit within 60 s of Ctrl-C; its threads:\n{server.communicate()[1]}")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
