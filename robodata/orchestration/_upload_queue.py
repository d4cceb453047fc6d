"""The upload sensor's decisions, apart from its Dagster sensor (only its settings are a Dagster resource): which uploads to request this tick, and the
small cursor it keeps between ticks (the upload queue: what is in flight, retried, given up on).

What is ingested is known from the dataset itself (the upload fingerprint stored with each
episode), so the cursor does not grow with the number of uploads.

Every tick lists the whole uploads root while one listing of it costs at most
``full_listing_budget_s`` (2 s): a new, changed, re-dropped or fixed
upload is then seen by the next tick, wherever its name sorts. Past that budget, most ticks list
only the tail of the root: the folders that sort after ``after`` (on S3 one ListObjectsV2 with
``StartAfter``), the last folder of an unbroken run, in key order, of folders already dealt with
(requested and succeeded, found ingested, given up on, or without ``episode.json`` for
``stalled_after_s``). With folder names that sort in arrival order (zero-padded counters,
timestamps) a new upload is always in the tail, and an idle tick lists next to nothing. Every
``full_listing_every_s`` such a tick lists everything (a reconciliation): it finds what the tail
cannot see, a new folder whose name sorts before ``after`` and a re-uploaded (changed) folder,
and moves ``after`` back before anything it requests until that run succeeded.

The cursor holds:

- ``hwm``: a high-water mark of upload write times. Uploads last written more than ``slack_s``
  before it have been handled and are not looked at again (re-uploading a folder writes new
  files, which moves it past the mark). The slack covers S3 timestamps (a multipart upload
  carries the time it started) and clocks that disagree.
- ``window``: a digest of the uploads inside the slack window when they were last found handled,
  so a tick where nothing changed reads neither the dataset nor the instance's partitions.
- ``pending``: uploads requested and not yet seen succeed (bounded by ``max_in_flight``), with
  their attempt count; a failed or timed-out run is requested again, up to ``max_attempts``.
- ``failed``: uploads whose runs failed ``max_attempts`` times (only while inside the window).
- ``full_cost``: how long the last full listing took (whether the next tick lists in full).
- ``after``, ``full_at``, ``full_hwm``: the folder the tail listing starts after, when the last
  full listing ran, and the high-water mark it left (the next full listing looks at everything
  written since ``full_hwm - slack_s``, whatever the tail ticks in between moved ``hwm`` to).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg
from pydantic import Field

from robodata.storage._uploads import UploadInfo, UploadListing, folder_sorts_after


class UploadSensorSettings(dg.ConfigurableResource):
    """How much the upload sensor does per tick, and when it retries or warns: both sensors'
    resource ``upload_sensor_settings`` (defs/resources.py), which the plan reads; the one place
    each default is set."""

    max_requests_per_tick: int = Field(default=100, description="Runs requested per tick at most; the rest next tick.")
    max_in_flight: int = Field(default=400, description="Uploads requested and not yet finished, at most.")
    max_attempts: int = Field(default=3, description="Runs per upload version before the sensor gives up on it.")
    retry_after_s: float = Field(default=6 * 3600.0, description="A run not finished after this is requested again.")
    slack_s: float = Field(default=900.0, description="Uploads written this long before the high-water mark count.")
    stalled_after_s: float = Field(default=3600.0, description="Warn about a folder without episode.json this long.")
    full_listing_every_s: float = Field(
        default=600.0,
        description="Past full_listing_budget_s, list the whole uploads root this often (other ticks list only "
        "the folders after the last one dealt with): finds re-uploaded folders and new ones whose names sort "
        "before the last.",
    )
    full_listing_budget_s: float = Field(
        default=2.0,
        description="List the whole uploads root every tick while one listing takes at most this long, so a "
        "changed or fixed upload is seen by the next tick.",
    )


@dataclass
class Pending:
    fingerprint: str
    attempt: int
    requested_at: float


@dataclass
class UploadCursor:
    hwm: float = 0.0
    window: str = ""
    checked_at: float = 0.0
    pending: dict[str, Pending] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    after: str = ""
    full_at: float = 0.0
    full_hwm: float = 0.0
    full_cost: float = 0.0

    def dumps(self) -> str:
        return json.dumps(
            {
                "v": 3,
                "after": self.after,
                "full_at": self.full_at,
                "full_hwm": self.full_hwm,
                "full_cost": round(self.full_cost, 3),
                "hwm": self.hwm,
                "window": self.window,
                "checked_at": self.checked_at,
                "pending": {k: [p.fingerprint, p.attempt, round(p.requested_at, 1)] for k, p in self.pending.items()},
                "failed": self.failed,
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def loads(cls, text: str | None) -> UploadCursor:
        """The cursor in ``text``; an empty or older-format cursor starts afresh (what is already
        ingested is read from the dataset, so nothing is requested twice). A version-2 cursor
        (before tail listings) keeps its runs in flight; its next tick lists everything."""
        data = json.loads(text) if text else {}
        if data.get("v") not in (2, 3):
            return cls()
        return cls(
            hwm=data["hwm"],
            window=data["window"],
            checked_at=data["checked_at"],
            pending={k: Pending(fp, attempt, at) for k, (fp, attempt, at) in data["pending"].items()},
            failed=dict(data["failed"]),
            after=data.get("after", ""),
            full_at=data.get("full_at", 0.0),
            full_hwm=data.get("full_hwm", 0.0),
            full_cost=data.get("full_cost", 0.0),
        )


def listing_start(cursor: UploadCursor, now: float, settings: UploadSensorSettings) -> str:
    """The folder this tick's listing starts after: ``""`` (list everything) while a full
    listing costs at most ``full_listing_budget_s`` or when one is due, else the cursor's ``after``.

    >>> listing_start(UploadCursor(after="episode_000041", full_at=1000.0, full_cost=0.3), 1030.0, UploadSensorSettings())
    ''
    >>> listing_start(UploadCursor(after="episode_000041", full_at=1000.0, full_cost=9.0), 1030.0, UploadSensorSettings())
    'episode_000041'
    """
    if cursor.full_cost < settings.full_listing_budget_s:
        return ""
    if not 0 <= now - cursor.full_at < settings.full_listing_every_s:  # due, or the clock went back
        return ""
    return cursor.after


@dataclass(frozen=True)
class Request:
    """Ingest ``upload`` (attempt ``attempt`` for this fingerprint)."""

    upload: UploadInfo
    attempt: int


@dataclass(frozen=True)
class RunOutcome:
    """A finished run of the ingest job, as the instance reports it. A run that failed on bad
    input (``bad_input``: the reason) fails the same way every time: it is not requested again."""

    episode_id: str
    fingerprint: str
    attempt: int
    succeeded: bool
    bad_input: str = ""


@dataclass
class TickPlan:
    requests: list[Request]
    cursor: UploadCursor
    known: list[str]  # in-window uploads found already ingested (they get a partition too)
    warnings: list[str]
    read_dataset: bool  # whether this tick had to read the stored fingerprints


def plan_tick(
    listing: UploadListing,
    cursor: UploadCursor,
    stored_fingerprints: Callable[[], dict[str, str]],
    outcomes: list[RunOutcome],
    now: float,
    settings: UploadSensorSettings,
    listed_after: str = "",
) -> TickPlan:
    """Decide one tick from ``listing``, the folders after ``listed_after`` (``""``: a full
    listing; see ``listing_start``). ``stored_fingerprints`` (episode id -> fingerprint in the
    dataset) is called only when some upload inside the window changed since it was last found
    handled.

    >>> import time
    >>> from robodata.storage._uploads import scan_uploads
    >>> plan = plan_tick(scan_uploads("uploads"), UploadCursor(), dict, [], time.time() + 3600, UploadSensorSettings())
    >>> [(r.upload.episode_id, r.attempt) for r in plan.requests]  # an hour later, none stored yet
    [('episode_000000', 1), ('episode_000001', 1), ('episode_000002', 1)]
    """
    warnings = _stalled_uploads(listing, now, settings)
    pending = dict(cursor.pending)
    failed = dict(cursor.failed)
    retries = _settle_pending(pending, failed, outcomes, now, settings, warnings)
    by_id = {u.episode_id: u for u in listing.complete}
    requests = []
    landed: list[str] = []
    # A run that failed, was canceled or was lost may still have stored its episode (a worker
    # killed after the commit): ask the dataset before requesting it again.
    stored_now = stored_fingerprints() if retries else {}
    for key, attempt in retries:
        upload = by_id.get(key)
        if upload is None or upload.fingerprint != pending[key].fingerprint:
            del pending[key]  # gone or changed since: a changed upload is a new candidate below
            continue
        if stored_now.get(key) == upload.fingerprint:
            del pending[key]  # it landed: done
            landed.append(key)
            continue
        requests.append(Request(upload, attempt))

    full = not listed_after
    floor = (cursor.full_hwm if full else cursor.hwm) - settings.slack_s
    window = sorted((u for u in listing.complete if u.last_write > floor), key=lambda u: (u.last_write, u.episode_id))
    # Given-up uploads the tail did not list stay given up (until a full listing sees them).
    failed = {
        k: fp
        for k, fp in failed.items()
        if (k in by_id and by_id[k].last_write > floor) or not folder_sorts_after(k, listed_after)
    }
    digest = _digest(window)
    read_dataset = bool(retries)
    known: list[str] = list(landed)
    new_hwm = max([cursor.hwm, *(u.last_write for u in window)])
    waiting: list[UploadInfo] = []  # found, not requested yet (over the cap)
    if digest != cursor.window:
        candidates = [
            u
            for u in window
            if (u.episode_id not in pending or pending[u.episode_id].fingerprint != u.fingerprint)
            and failed.get(u.episode_id) != u.fingerprint
        ]
        if candidates:
            read_dataset = True
            stored = stored_fingerprints()
            known += [u.episode_id for u in candidates if stored.get(u.episode_id) == u.fingerprint]
            candidates = [u for u in candidates if stored.get(u.episode_id) != u.fingerprint]
        room = max(0, min(settings.max_requests_per_tick - len(requests), settings.max_in_flight - len(pending)))
        for upload in candidates[:room]:
            pending[upload.episode_id] = Pending(upload.fingerprint, 1, now)
            requests.append(Request(upload, 1))
        if len(candidates) > room:
            # A backlog: keep the mark below the first upload not requested, and the window
            # digest empty so the next tick looks again.
            new_hwm = max(cursor.hwm, candidates[room].last_write)
            digest = ""
            waiting = candidates[room:]
    after = _settled_until(listing, listed_after, pending, waiting, now, settings)
    next_cursor = UploadCursor(
        hwm=new_hwm,
        window=digest,
        checked_at=now,
        pending=pending,
        failed=failed,
        after=after,
        full_at=now if full else cursor.full_at,
        full_hwm=new_hwm if full else cursor.full_hwm,
        full_cost=cursor.full_cost,  # the sensor times its full listings
    )
    return TickPlan(requests, next_cursor, known, warnings, read_dataset)


def _settled_until(
    listing: UploadListing,
    listed_after: str,
    pending: dict[str, Pending],
    waiting: list[UploadInfo],
    now: float,
    settings: UploadSensorSettings,
) -> str:
    """The last listed folder, in key order, before the first one the sensor still has to watch:
    an upload in flight or waiting to be requested, or a folder without ``episode.json`` that is
    not yet stalled (it may still complete). The next tail listing starts after it."""
    unsettled = set(pending) | {u.episode_id for u in waiting}
    unsettled |= {u.episode_id for u in listing.incomplete if now - u.last_write <= settings.stalled_after_s}
    listed = [u.episode_id for u in listing.complete] + [u.episode_id for u in listing.incomplete]
    after = listed_after
    for name in sorted(listed, key=lambda n: n + "/"):  # the order S3 lists their keys in
        if name in unsettled:
            break
        after = name
    return after


def _settle_pending(
    pending: dict[str, Pending],
    failed: dict[str, str],
    outcomes: list[RunOutcome],
    now: float,
    settings: UploadSensorSettings,
    warnings: list[str],
) -> list[tuple[str, int]]:
    """Drop pending uploads whose run succeeded; return (episode id, next attempt) for those
    whose run failed or was not heard of in ``retry_after_s``. Gives up after ``max_attempts``,
    and at once on a run that failed on bad input (until the upload changes)."""
    to_retry = set()
    for outcome in outcomes:
        entry = pending.get(outcome.episode_id)
        if entry is None or (entry.fingerprint, entry.attempt) != (outcome.fingerprint, outcome.attempt):
            continue
        if outcome.succeeded:
            del pending[outcome.episode_id]
        elif outcome.bad_input:
            del pending[outcome.episode_id]
            failed[outcome.episode_id] = entry.fingerprint
            warnings.append(
                f"{outcome.episode_id}: bad upload, not requested again until it changes: {outcome.bad_input}"
            )
        else:
            to_retry.add(outcome.episode_id)
    to_retry |= {k for k, p in pending.items() if now - p.requested_at > settings.retry_after_s}
    retries = []
    for key in sorted(to_retry):
        entry = pending[key]
        if entry.attempt >= settings.max_attempts:
            del pending[key]
            failed[key] = entry.fingerprint
            warnings.append(f"{key}: ingest failed {entry.attempt} times; not requested again until the upload changes")
            continue
        pending[key] = Pending(entry.fingerprint, entry.attempt + 1, now)
        retries.append((key, entry.attempt + 1))
    return retries


def _stalled_uploads(listing: UploadListing, now: float, settings: UploadSensorSettings) -> list[str]:
    stalled = [u for u in listing.incomplete if now - u.last_write > settings.stalled_after_s]
    if not stalled:
        return []
    names = ", ".join(u.episode_id for u in stalled[:10])
    if len(stalled) > 10:
        names += f" and {len(stalled) - 10} more"
    hours = settings.stalled_after_s / 3600
    return [f"{len(stalled)} upload folder(s) without episode.json for over {hours:g} h: {names}"]


def _digest(uploads: list[UploadInfo]) -> str:
    digest = hashlib.sha256()
    for upload in sorted(uploads, key=lambda u: u.episode_id):
        digest.update(f"{upload.episode_id}|{upload.fingerprint}\n".encode())
    return digest.hexdigest()[:16]
