"""Which version of a robodata dataset a ``robodata-train`` run reads, recorded where LeRobot
records its run.

A fresh run reads ``--dataset.revision`` (a version number or a tag), or the latest version when
none is given, and names what it read with a Lance tag ``robodata-train-v<N>``. That tag becomes
the run's ``cfg.dataset.revision`` before LeRobot saves anything, so the checkpoint's
``train_config.json`` records it; the training log says it too. A resume (``--resume=true``)
reads the version its checkpoint recorded, or refuses, in one line naming both versions, when it
cannot: the version is gone, the tag now names another version, ``--dataset.revision`` asks for
another one, or the checkpoint (from before robodata-train recorded versions) names none.

>>> pin = pin_fresh_run("data/demo", None)
>>> pin.version, pin.tag, robodata.open("data/demo", version=pin.tag).version
(3, 'robodata-train-v3', 3)
>>> pin_resumed_run("data/demo", pin.tag, recorded=pin.tag).version
3
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from robodata.errors import NotFoundError, RoboDataError
from robodata.reader import open_dataset
from robodata.storage import env_storage_options, safe_uri

TAG_PREFIX = "robodata-train-v"
_TAG = re.compile(rf"^{re.escape(TAG_PREFIX)}(\d+)$")


@dataclass(frozen=True)
class Pin:
    """The version a run reads: its number and the tag that names it (None when the dataset
    could not be tagged, e.g. read-only credentials; the revision is then the number)."""

    uri: str
    version: int
    tag: str | None

    @property
    def revision(self) -> str:
        """What the run's ``--dataset.revision`` becomes."""
        return self.tag or str(self.version)

    def describe(self) -> str:
        tag = f" (tag {self.tag})" if self.tag else ""
        return f"{safe_uri(self.uri)} version {self.version}{tag}"


def run_tag(version: int) -> str:
    """The tag a run names the version it read with: ``robodata-train-v<N>``."""
    return f"{TAG_PREFIX}{version}"


def as_version(revision: object) -> int | str | None:
    """A LeRobot ``revision`` as a robodata version: a number, a tag, or None (the latest)."""
    if revision is None or revision == "":
        return None
    return int(str(revision)) if str(revision).isdigit() else str(revision)


def pin_fresh_run(uri: str, revision: object, storage_options: dict | None = None) -> Pin:
    """The version a new run reads (``revision``, or the latest), tagged ``robodata-train-v<N>``."""
    options = storage_options if storage_options is not None else env_storage_options()
    ds = open_dataset(uri, version=as_version(revision), storage_options=options)
    tag = run_tag(ds.version)
    try:
        ds.tag(tag)
    except (RoboDataError, OSError, ValueError) as exc:  # a read-only store: the number still pins it
        logging.warning(f"robodata-train: could not tag {safe_uri(uri)} version {ds.version} as {tag}: {exc}")
        return Pin(uri, ds.version, None)
    return Pin(uri, ds.version, tag)


def pin_resumed_run(uri: str, revision: object, recorded: object, storage_options: dict | None = None) -> Pin:
    """The version a resumed run reads: the one its checkpoint ``recorded`` (``revision`` is what
    the resumed command line asks for; the checkpoint's own unless overridden). A SystemExit, one
    line naming both versions, when that version cannot be read."""
    options = storage_options if storage_options is not None else env_storage_options()
    where = safe_uri(uri)
    latest = open_dataset(uri, storage_options=options).version
    if as_version(recorded) is None:
        raise SystemExit(
            f"robodata-train: the checkpoint records no version of {where} (a run from before robodata-train "
            f"recorded them), and the latest is version {latest}: resume with --dataset.revision=<the version it "
            f"trained on> (or ={latest} to train on the latest)"
        )
    trained = _resolve(uri, recorded, options, latest)
    if as_version(revision) is not None and str(revision) != str(recorded):
        asked = _resolve(uri, revision, options, latest)
        if asked != trained:
            raise SystemExit(
                f"robodata-train: the checkpoint trained on {where} version {trained} ({recorded}), but "
                f"--dataset.revision={revision} is version {asked}; resume without --dataset.revision to read "
                f"version {trained}, or start a new run on version {asked}"
            )
    tag = None if str(recorded).isdigit() else str(recorded)
    if tag is not None and open_dataset(uri, storage_options=options).tags.get(tag) != trained:
        tag = None  # the tag is gone (its version is not): the run reads the version by its number
    return Pin(uri, trained, tag)


def _resolve(uri: str, revision: object, options: dict | None, latest: int) -> int:
    """The version number ``revision`` (a number or a tag) names now; SystemExit when it is gone or a
    ``robodata-train-v<N>`` tag names another version than N."""
    wanted = as_version(revision)
    number = wanted if isinstance(wanted, int) else _tag_number(str(wanted))
    try:
        version = open_dataset(uri, version=wanted, storage_options=options).version
    except NotFoundError:
        if number is not None and not isinstance(wanted, int):  # the tag is gone; its version may not be
            return _resolve(uri, number, options, latest)
        recorded = f"version {number}" if number is not None else f"the version tagged {wanted!r}"
        raise SystemExit(
            f"robodata-train: the checkpoint trained on {safe_uri(uri)} {recorded}, which is no longer stored "
            f"(the latest is version {latest}); start a new run on version {latest}"
        ) from None
    if number is not None and version != number:
        raise SystemExit(
            f"robodata-train: the checkpoint trained on {safe_uri(uri)} version {number}, but its tag {wanted} "
            f"now names version {version}; resume with --dataset.revision={number} if version {number} is kept"
        )
    return version


def _tag_number(tag: str) -> int | None:
    match = _TAG.match(tag)
    return int(match.group(1)) if match else None


def recorded_revision(checkpoint_path: object, revision: object) -> object:
    """The ``dataset.revision`` a checkpoint's ``train_config.json`` holds (``revision`` when the
    file is not there to read: the config LeRobot loaded from it)."""
    if checkpoint_path is None:
        return revision
    config = Path(str(checkpoint_path)) / "pretrained_model" / "train_config.json"
    try:
        return json.loads(config.read_text()).get("dataset", {}).get("revision")
    except (OSError, ValueError):
        return revision
