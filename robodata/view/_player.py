"""The page's style sheet and its player script, inlined into every page (no network, no files).

The player keeps one clock for the episode, and every video is seeked to the clock's time, paused
or playing, so all cameras show the frame of the same row. Playing, the videos never run by
themselves (a video that decodes late would drift from the others, by 0.7 s under load): on each
animation frame every camera is seeked to the clock, and the clock waits while any camera is
still seeking, so a slow machine plays slower, never out of step. The plot cursor, the
slider and the label read-out follow the clock. Once every video has decoded its first frame
and shows the row named by ``#row=N`` in the address (or the first), on screen, the page sets
``data-ready="true"`` on <body> and records each camera's and the plot's box,
so a headless browser can tell it rendered.
"""

PAGE_CSS = """
:root { font-family: system-ui, sans-serif; color: #222; background: #fafafa; }
body { margin: 0 auto; padding: 12px 20px; max-width: 1400px; }
h1 { font-size: 1.3rem; margin: 0 0 4px; }
h1 .task { color: #555; font-weight: normal; }
.instruction { font-size: 1.05rem; margin: 4px 0 8px; }
.facts { display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 0 0 10px; font-size: 0.85rem; color: #444; }
.facts dt { font-weight: 600; display: inline; } .facts dd { display: inline; margin: 0 0 0 4px; }
#cameras { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 8px; }
.camera { margin: 0; background: #000; }
.camera video { display: block; width: 100%; height: auto; }
.camera figcaption { color: #eee; font-size: 0.8rem; padding: 3px 6px; background: #222; }
#controls { display: flex; align-items: center; gap: 10px; margin: 10px 0 4px; }
#controls button { min-width: 5.5em; }
#scrub { flex: 1; }
#clock { font-variant-numeric: tabular-nums; min-width: 17em; text-align: right; font-size: 0.9rem; }
#now { font-size: 0.85rem; color: #333; min-height: 1.2em; margin-bottom: 6px; }
#now span { margin-right: 14px; }
#plot .frame { position: relative; cursor: crosshair; background: #fff; }
#plot svg { display: block; width: 100%; height: auto; }
#cursor { position: absolute; width: 2px; margin-left: -1px; background: #000; pointer-events: none; }
.error { color: #b00; font-weight: 600; }
"""

PLAYER_JS = r"""
(() => {
  const data = JSON.parse(document.getElementById("episode-data").textContent);
  const videos = [...document.querySelectorAll("#cameras video")];
  const scrub = document.getElementById("scrub"), clock = document.getElementById("clock");
  const play = document.getElementById("play"), speedBox = document.getElementById("speed");
  const cursor = document.getElementById("cursor"), frame = document.querySelector("#plot .frame");
  const now = document.getElementById("now");
  const seconds = data.seconds, n = seconds.length, box = data.cursor;
  let t = 0, playing = false, last = null;

  cursor.style.top = (box.top * 100) + "%";
  cursor.style.height = ((box.bottom - box.top) * 100) + "%";

  function rowAt(time) {  // the last row starting at or before `time`
    let lo = 0, hi = n - 1;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (seconds[mid] <= time + 1e-9) lo = mid; else hi = mid - 1; }
    return lo;
  }
  function valueAt(segments, row) {
    for (const [start, stop, value] of segments) if (row >= start && row < stop) return value;
    return "\u2014";
  }
  function seekTo(v, time) {
    // A hair past the row's time: the frame shown is the one that row points at.
    const target = Math.min(time + 1e-4, Math.max(0, (v.duration || data.duration) - 1e-3));
    v.currentTime = target;
    return target;
  }
  function seekVideos(time) { for (const v of videos) seekTo(v, time); }
  function show(time) {
    t = Math.min(Math.max(time, 0), data.duration);
    const row = rowAt(t);
    scrub.value = row;
    clock.textContent = `${t.toFixed(3)} s \u00b7 row ${row} / ${n - 1}`;
    cursor.style.left = ((box.left + (box.right - box.left) * t / data.duration) * 100) + "%";
    now.replaceChildren(...Object.entries(data.bands).map(([name, segments]) => {
      const span = document.createElement("span");
      span.textContent = `${name}: ${valueAt(segments, row)}`;
      return span;
    }));
    document.body.dataset.row = row;
  }
  function pause() {
    playing = false; last = null; play.textContent = "\u25b6 play";
    for (const v of videos) v.pause();
    seekVideos(t);
  }
  function start() {
    if (t >= data.duration - 1e-6) show(0);
    playing = true; last = null; play.textContent = "\u275a\u275a pause";
    seekVideos(t);
    requestAnimationFrame(tick);
  }
  function tick(stamp) {
    if (!playing) return;
    // The master clock: it advances only while every camera shows its time.
    const busy = videos.some((v) => v.seeking);
    if (last !== null && !busy) t += (stamp - last) / 1000 * Number(speedBox.value);
    last = stamp;
    if (t >= data.duration) { show(data.duration); pause(); return; }
    show(t);
    if (!busy) seekVideos(t);
    requestAnimationFrame(tick);
  }
  function stepRow(delta) {
    if (playing) pause();
    const row = Math.min(Math.max(rowAt(t) + delta, 0), n - 1);
    show(seconds[row]); seekVideos(t);
  }

  play.addEventListener("click", () => (playing ? pause() : start()));
  scrub.addEventListener("input", () => { if (playing) pause(); show(seconds[Number(scrub.value)]); seekVideos(t); });
  frame.addEventListener("click", (event) => {
    const r = frame.getBoundingClientRect(), x = (event.clientX - r.left) / r.width;
    const time = (x - box.left) / (box.right - box.left) * data.duration;
    if (time < 0 || time > data.duration) return;
    if (playing) pause();
    show(time); seekVideos(t);
  });
  document.addEventListener("keydown", (event) => {
    if (event.target.tagName === "INPUT" || event.target.tagName === "SELECT") return;
    if (event.key === " ") { event.preventDefault(); playing ? pause() : start(); }
    else if (event.key === "ArrowRight") stepRow(+1);
    else if (event.key === "ArrowLeft") stepRow(-1);
  });

  function boxOf(element) {
    const r = element.getBoundingClientRect();
    return [r.left + scrollX, r.top + scrollY, r.width, r.height].map(Math.round).join(",");
  }
  function loaded(v) {
    return new Promise((resolve) => {
      const fail = () => { v.closest("figure").dataset.error = String(v.error && v.error.code); resolve(false); };
      if (v.error) return fail();
      if (v.readyState >= 2) return resolve(true);
      v.addEventListener("loadeddata", () => resolve(true), { once: true });
      v.addEventListener("error", fail, { once: true });
    });
  }
  // Seeked and on screen: "seeked" says the frame is decoded, and the compositor shows it a
  // moment later (seconds later on a busy machine); requestVideoFrameCallback fires once it is
  // presented. Without that API, or when the seek lands on the frame already shown (nothing new
  // is presented), the page waits 3 s at most.
  function onScreen(v) {
    return new Promise((resolve) => {
      if (v.error || !v.requestVideoFrameCallback) return resolve();
      const timer = setTimeout(resolve, 3000);
      v.requestVideoFrameCallback(() => { clearTimeout(timer); resolve(); });
    });
  }
  function seeked(v, time) {
    return new Promise((resolve) => {
      if (v.error) return resolve();
      // Only a seek that ends at the row's time counts (an earlier one may still be finishing).
      let target = NaN;
      const done = () => {
        if (v.seeking || !(Math.abs(v.currentTime - target) <= 0.01)) return;
        v.removeEventListener("seeked", done);
        onScreen(v).then(resolve);
      };
      v.addEventListener("seeked", done);
      target = seekTo(v, time);
    });
  }
  // "#row=N" in the address opens the page at row N (a link to a moment of the episode).
  const startRow = Math.min(Number((location.hash.match(/row=(\d+)/) || [0, 0])[1]), n - 1);
  show(seconds[startRow]);
  Promise.all(videos.map(loaded)).then(async (results) => {
    await Promise.all(videos.map((v) => seeked(v, t)));
    for (const v of videos) {
      const figure = v.closest("figure");
      figure.dataset.decoded = `${v.videoWidth}x${v.videoHeight}`;
      figure.dataset.box = boxOf(figure.querySelector("video"));
    }
    frame.dataset.box = boxOf(frame);
    document.body.dataset.camerasReady = results.filter(Boolean).length;
    const failed = videos.length - results.filter(Boolean).length;
    if (failed) {
      const note = document.createElement("p");
      note.className = "error";
      note.textContent = `${failed} camera video(s) could not be played by this browser`;
      document.getElementById("cameras").after(note);
    }
    document.body.dataset.ready = failed ? "error" : "true";
  });
})();
"""
