"""The key columns of the two tables, declared to Lance as (unenforced) primary keys.

Lance checks a ``merge_insert`` on a table's declared primary key against concurrent commits:
two writers inserting the same new key both plan an insert, and the later commit is detected
and re-planned against the winner's rows (an update, not a second copy). Without the declaration
both inserts commit and the table holds the key twice. Both tables are written only through
``merge_insert`` on these keys for that reason. The key is declared when a table is created
(``with_primary_key``); adding columns, metadata commits and compaction keep it.
"""

from __future__ import annotations

import lance
import pyarrow as pa
from lance.dataset import MergeInsertBuilder

PRIMARY_KEY_METADATA = {"lance-schema:unenforced-primary-key": "true"}
FRAMES_KEY = ("episode_index", "frame_index")
GOPS_KEY = ("ref_id",)


def with_primary_key(schema: pa.Schema, columns: tuple[str, ...]) -> pa.Schema:
    """``schema`` with ``columns`` marked as its primary key (schema metadata kept).

    >>> from robodata.format._schema import GOPS_SCHEMA
    >>> with_primary_key(GOPS_SCHEMA, GOPS_KEY).field("ref_id").metadata
    {b'lance-schema:unenforced-primary-key': b'true'}
    """
    for name in columns:
        index = schema.get_field_index(name)
        field = schema.field(index)
        schema = schema.set(index, field.with_metadata({**(field.metadata or {}), **PRIMARY_KEY_METADATA}))
    return schema


def keyed_merge(table: lance.LanceDataset, key: tuple[str, ...]) -> MergeInsertBuilder:
    """A ``merge_insert`` on ``key`` whose commit Lance checks for concurrent inserts of the same
    keys; every write keyed on these columns goes through here. It joins without a scalar index:
    through the index ``robodata upkeep`` builds on ``ref_id``, Lance 14's commit did not check
    inserted keys, and two writers of one episode both inserted its GOPs
    (robodata_tests/edits/test_cleanup_race.py). The join reads the key columns instead, as it
    did before the table was indexed.

    >>> keyed_merge(lance.dataset("data/demo/gops.lance"), GOPS_KEY).when_not_matched_insert_all()  # doctest: +ELLIPSIS
    <lance.dataset.MergeInsertBuilder object at ...>
    """
    return table.merge_insert(list(key)).use_index(False)
