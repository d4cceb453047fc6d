"""Integrity: what vouches for a stored dataset, in one room.

- ``gop_checksums``: the xxh3-64 every GOP row carries, checked before any read hands bytes out.
- ``gop_checks``: stored GOP rows checked from their bytes (checksum, and decode when asked).
- ``episode_checks``: an episode's schema metadata, references, alignment, row count, sampled decode.
- ``audit``: write, audit, publish: an episode's staged GOPs and rows checked before its rows commit.
- ``gop_leases``: the records under ``_staging/`` that keep garbage collection off GOPs an ingest
  is about to reference.
- ``verify``: ``robodata verify``, every GOP and every row reference of a version.
- ``frames_checksums``: the xxh3 recorded for every frames.lance data file, checked on open and
  by verify (row data vouched for like GOPs).
- ``leftovers``: what crashes and races leave (GOPs stored twice, orphaned GOPs, stale leases,
  data files no version lists), found by verify and removed by gc.

It builds on codec/, format/ and storage/ only: the reader imports it (checksums on every
read), ingest (the audit, the leases) and edits (garbage collection reads the leases) too, so
it opens tables through ``format.tables`` and never imports the reader.
"""

from robodata.integrity._verify import VerifyReport, verify_dataset

__all__ = ["VerifyReport", "verify_dataset"]
