"""A fingerprint of an imported episode's source content, stored with its rows like an upload's
fingerprint (``robodata.format._provenance``), so importing the same source again skips it and an
episode edited in its source is imported again (``robodata.ingest._episode_source``).

Each importer hands over what it read from the source (signals as arrays or Arrow tables) and
facts about what is only decoded when written (video file sizes and spans). Import options
(a task text, a control rate given on the command line) are not source content and are left
out, so resuming an import with other options does not rewrite what is stored. The same
content copied elsewhere gives the same fingerprint.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa


def source_fingerprint(facts: object, *data: np.ndarray | pa.Table) -> str:
    """16 hex digits identifying ``facts`` (JSON-able) and the arrays or tables in ``data``.

    >>> qpos, action = np.zeros((20, 14)), np.ones((20, 14))
    >>> first = source_fingerprint({"file_size": 1834121}, qpos, action)
    >>> len(first), first == source_fingerprint({"file_size": 1834121}, qpos, action)
    (16, True)
    >>> first == source_fingerprint({"file_size": 1834121}, qpos, action + 1)  # the data changed
    False
    """
    digest = hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode())
    for item in data:
        if isinstance(item, pa.Table):
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, item.schema) as writer:
                writer.write_table(item.combine_chunks())
            digest.update(sink.getvalue())
        else:
            array = np.ascontiguousarray(item)
            digest.update(f"|{array.dtype}|{array.shape}|".encode())
            digest.update(array.tobytes())
    return digest.hexdigest()[:16]
