"""One training epoch of a 10 TB dataset from object storage, on paper: GETs, bytes and request fees
per epoch for each layout, scaled from what one ``robodata bench s3-epoch --peers VENV`` run
measured (the bytes each system's epoch read, its GETs, and how many bytes its copy of the
benchmark dataset stores), so docs/cluster.md's "Scale" table is computed, never typed.

Each layout is scaled to 10 TB of its own stored bytes: an epoch reads ``bytes_per_epoch /
stored_bytes`` of the dataset in GETs of the measured mean size.

>>> row = epoch_at_scale("robodata", stored_bytes=10**9, bytes_per_epoch=10**9, gets_per_epoch=1000)
>>> row.gets, row.fees_usd
(10000000, 4.0)
"""

from __future__ import annotations

from dataclasses import dataclass

TEN_TB = 10 * 10**12  # decimal terabytes, as storage is billed
# S3 Standard GET/SELECT list price, us-east-1: USD 0.0004 per 1,000 requests (the price list as of
# 2026-12; it has not changed since 2020). Transfer inside the region is free; storage is not counted.
GET_PRICE_USD_PER_1000 = 0.0004
PRICE_NOTE = (
    "S3 Standard GET list price USD 0.0004 per 1,000 requests (us-east-1, as of 2026-12; in-region transfer free)"
)


@dataclass(frozen=True)
class EpochAtScale:
    """One layout's epoch of a dataset of ``dataset_bytes`` stored bytes."""

    system: str
    dataset_bytes: int
    bytes_read: int  # bytes one epoch reads from the store
    gets: int  # GET requests one epoch makes
    mean_bytes_per_get: float  # as measured
    fees_usd: float  # request fees of one epoch at GET_PRICE_USD_PER_1000


def epoch_at_scale(
    system: str, *, stored_bytes: int, bytes_per_epoch: int, gets_per_epoch: int, dataset_bytes: int = TEN_TB
) -> EpochAtScale:
    """``system``'s measured epoch (``bytes_per_epoch`` in ``gets_per_epoch`` GETs over a copy of
    ``stored_bytes``) scaled to a dataset of ``dataset_bytes``: the same share of the dataset read
    per epoch, in GETs of the same mean size."""
    if stored_bytes <= 0 or gets_per_epoch <= 0:
        raise ValueError(f"{system}: stored bytes and GETs per epoch must be positive")
    mean = bytes_per_epoch / gets_per_epoch
    read = round(dataset_bytes * bytes_per_epoch / stored_bytes)
    gets = round(read / mean)
    return EpochAtScale(system, dataset_bytes, read, gets, mean, gets * GET_PRICE_USD_PER_1000 / 1000)


def scale_table(rows: list[EpochAtScale]) -> str:
    """The rows as a Markdown table (TB and millions of GETs, fees in USD)."""
    lines = [
        "| layout | dataset | read per epoch | mean GET | GETs per epoch | request fees per epoch |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.system} | {r.dataset_bytes / 1e12:g} TB | {r.bytes_read / 1e12:.2f} TB | "
            f"{r.mean_bytes_per_get / 1e3:,.1f} KB | {r.gets / 1e6:,.2f} M | ${r.fees_usd:,.2f} |"
        )
    return "\n".join(lines)
