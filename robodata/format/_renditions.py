"""Training renditions: extra, smaller copies of a camera's GOPs in gops.lance.

A rendition is named ``WIDTHxHEIGHT`` (``224x224``, ``320x240``); readers ask for it as
``resolution=(height, width)``, the order of a torch image's shape. Its GOP rows sit in
gops.lance beside the full-resolution ones, one per source GOP with the same frames, told
apart by two columns that datasets without renditions do not have (they read as before):

- ``rendition``: the rendition's name; null on full-resolution rows.
- ``source_ref_id``: the ref_id of the full-resolution GOP it was made from.

frames.lance rows keep pointing at the full-resolution GOPs; a reader maps a row's ref_id to
the rendition's through ``source_ref_id`` (``GopIndex.rendition_positions``). A rendition row's
own ref_id is derived from (source_ref_id, name), so adding a rendition twice stores it once.
frames.lance's schema metadata declares which renditions each camera has
(``DatasetMetadata.renditions``); ingest writes the declared ones for every new episode.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import pyarrow as pa

from robodata.errors import InvalidArgumentError
from robodata.storage._failures import storage_call

RENDITION_COLUMN = "rendition"
SOURCE_COLUMN = "source_ref_id"
RENDITION_FIELDS = (pa.field(RENDITION_COLUMN, pa.string()), pa.field(SOURCE_COLUMN, pa.int64()))
_NAME = re.compile(r"^(\d{1,5})x(\d{1,5})$")


@dataclass(frozen=True, order=True)
class Rendition:
    """A frame size: ``Rendition(224, 224)`` is (height, width).

    >>> Rendition.parse("320x240")
    Rendition(height=240, width=320)
    >>> Rendition.parse((240, 320)).name
    '320x240'
    """

    height: int
    width: int

    def __post_init__(self) -> None:
        if self.height < 2 or self.width < 2 or self.height % 2 or self.width % 2:
            raise InvalidArgumentError(f"a rendition needs even sizes of at least 2, got {self.width}x{self.height}")

    @property
    def name(self) -> str:
        return f"{self.width}x{self.height}"

    @property
    def size(self) -> tuple[int, int]:
        return (self.height, self.width)

    @classmethod
    def parse(cls, value: str | tuple[int, int] | list[int] | Rendition) -> Rendition:
        """From a name (``"224x224"``, WIDTHxHEIGHT) or a ``(height, width)`` pair."""
        if isinstance(value, Rendition):
            return value
        if isinstance(value, str):
            match = _NAME.match(value.strip())
            if not match:
                raise InvalidArgumentError(f"rendition {value!r} is not WIDTHxHEIGHT (e.g. 224x224)")
            return cls(int(match.group(2)), int(match.group(1)))
        if len(value) != 2:
            raise InvalidArgumentError(f"resolution must be (height, width), got {value!r}")
        return cls(int(value[0]), int(value[1]))

    def fits_in(self, height: int, width: int) -> bool:
        return self.height <= height and self.width <= width


def rendition_ref_id(source_ref_id: int, name: str) -> int:
    """The ref_id of rendition ``name`` of the GOP ``source_ref_id``: the same pair always gets
    the same id, so the keyed GOP commit stores a rendition once however often it is added.

    >>> rendition_ref_id(42, "224x224") == rendition_ref_id(42, "224x224") != rendition_ref_id(42, "320x240")
    True
    """
    digest = hashlib.blake2b(f"rendition/{int(source_ref_id)}/{name}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "little", signed=True)


def source_for(
    camera_size: tuple[int, int], declared: list[str], resolution: tuple[int, int] | Rendition | None
) -> tuple[Rendition | None, tuple[int, int] | None]:
    """Which GOPs to decode for frames of ``resolution`` from a camera of ``camera_size``
    (height, width) with ``declared`` renditions, and the size to scale them to afterwards.

    The smallest declared rendition at least as large as the request in both sides (None: the
    full-resolution GOPs); the scale is None when that source already has the requested size.

    >>> source_for((480, 640), ["224x224", "320x240"], (224, 224))
    (Rendition(height=224, width=224), None)
    >>> source_for((480, 640), ["224x224", "320x240"], (120, 160))
    (Rendition(height=224, width=224), (120, 160))
    >>> source_for((480, 640), ["224x224"], (240, 320))
    (None, (240, 320))
    """
    if resolution is None:
        return None, None
    wanted = Rendition.parse(resolution)
    candidates = sorted(
        (r for r in map(Rendition.parse, declared) if wanted.fits_in(r.height, r.width)),
        key=lambda r: r.height * r.width,
    )
    if (
        wanted.size == tuple(camera_size)
        or not candidates
        or candidates[0].height * candidates[0].width >= camera_size[0] * camera_size[1]
    ):
        return None, (None if wanted.size == tuple(camera_size) else wanted.size)
    best = candidates[0]
    return best, (None if best == wanted else wanted.size)


def rendition_counts(metadata, gops, storage_options: dict | None = None) -> dict[str, dict[str, int]]:
    """camera -> {"full": full-resolution GOP rows, rendition name: its GOP rows} for the cameras
    with renditions ``metadata`` (a DatasetMetadata) declares; ``{}`` when it declares none. A
    rendition not yet added to every episode shows fewer rows than ``full``.

    >>> from robodata.format._tables import gops_uri, open_table
    >>> from robodata.ingest._renditions import add_rendition
    >>> _ = add_rendition("data/demo", "224x224", cameras=["top"])
    >>> rendition_counts(robodata.open("data/demo").metadata, open_table(gops_uri("data/demo")))
    {'top': {'full': 45, '224x224': 45}}
    """
    if not metadata.renditions or gops is None:
        return {}
    with_column = RENDITION_COLUMN in gops.schema.names
    columns = ["camera", RENDITION_COLUMN] if with_column else ["camera"]
    table = storage_call("counting rendition GOPs", gops.uri, storage_options, gops.to_table, columns=columns)
    if not with_column:
        table = table.append_column(RENDITION_COLUMN, pa.nulls(table.num_rows, pa.string()))
    grouped = table.group_by(["camera", RENDITION_COLUMN]).aggregate([("camera", "count")])
    stored = {
        (camera, name): n
        for camera, name, n in zip(
            *(grouped[k].to_pylist() for k in ("camera", RENDITION_COLUMN, "camera_count")), strict=True
        )
    }
    return {
        camera: {"full": stored.get((camera, None), 0), **{name: stored.get((camera, name), 0) for name in names}}
        for camera, names in sorted(metadata.renditions.items())
    }


def without_renditions_of_kept_gops(gops, orphans: list[int], storage_options: dict | None = None) -> list[int]:
    """``orphans`` (GOP ref_ids no frames row points at) less the rendition GOPs whose
    full-resolution source stays: no row names a rendition, it is referenced through its source.

    >>> from robodata.format._tables import gops_uri, open_table
    >>> from robodata.ingest._renditions import add_rendition
    >>> _ = add_rendition("data/demo", "224x224", cameras=["top"])
    >>> gops = open_table(gops_uri("data/demo"))
    >>> kept = robodata.reader._dataset.gop_store(ds).frame_refs([0], "top")[0][0]  # the GOP of row 0: frames point at it
    >>> orphan = 12345  # no frames row points at it, and it is no rendition
    >>> without_renditions_of_kept_gops(gops, [rendition_ref_id(kept, "224x224"), orphan])
    [12345]
    """
    if RENDITION_COLUMN not in gops.schema.names or not orphans:
        return orphans
    table = storage_call(
        "finding the renditions of the GOPs kept",
        gops.uri,
        storage_options,
        gops.to_table,
        columns=["ref_id", SOURCE_COLUMN],
        filter=f"{SOURCE_COLUMN} IS NOT NULL",
    )
    source_of = dict(zip(table["ref_id"].to_pylist(), table[SOURCE_COLUMN].to_pylist(), strict=True))
    dropped = set(orphans)
    return [r for r in orphans if r not in source_of or source_of[r] in dropped]


def full_resolution_only(gops, where: str | None = None) -> str | None:
    """A Lance filter for gops.lance selecting the full-resolution GOPs (and ``where``): what
    "the dataset's video bytes" means when renditions sit beside them.

    >>> from robodata.format._tables import gops_uri, open_table
    >>> full_resolution_only(open_table(gops_uri("data/demo")), "episode_index IN (0)")  # no renditions: all are
    'episode_index IN (0)'
    >>> from robodata.ingest._renditions import add_rendition
    >>> _ = add_rendition("data/demo", "224x224", cameras=["top"])
    >>> full_resolution_only(open_table(gops_uri("data/demo")), "episode_index IN (0)")
    '(episode_index IN (0)) AND rendition IS NULL'
    """
    if RENDITION_COLUMN not in gops.schema.names:
        return where
    full = f"{RENDITION_COLUMN} IS NULL"
    return full if where is None else f"({where}) AND {full}"
