"""Hand pyarrow files from fsspec (local or s3://) as in-memory buffers, never as Python file
objects.

Given a Python file object, pyarrow reads it from its own I/O thread pool, each read calling
back into Python. When a read fails (a corrupt or truncated file, a dropped connection), the
error reaches the caller while other reads are still in flight; if the process then exits,
those threads try to take the GIL of an interpreter that is shutting down, Python ends them
with ``pthread_exit``, and unwinding through pyarrow's C++ frames aborts the whole process:
"terminate called without an active exception", exit code 134, a random few runs in ten.
Reading the bytes on the caller's thread first leaves pyarrow nothing to call back into.

The bytes must also be Arrow's own, not a Python ``bytes`` object: pyarrow wraps ``bytes`` in a
buffer whose destructor takes the GIL. A Parquet read's worker thread drops its last reference
to the buffer a moment after the read returns; when a rejection (a null action row) exits the
process in that moment, the destructor meets the finalizing interpreter and the same abort
follows (1 run in about 30; found with gdb: ``arrow::py::PyBuffer::~PyBuffer`` ->
``PyGILState_Ensure`` -> ``pthread_exit`` -> ``std::terminate`` on an arrow ThreadPool worker).
So the file is copied, a chunk at a time, into memory Arrow allocated.
"""

from __future__ import annotations

import pyarrow as pa

from robodata.storage._deadlines import call_with_deadline

_CHUNK_BYTES = 8 << 20


def arrow_input(fs, path: str) -> pa.BufferReader:
    """The whole file at ``path`` (through the fsspec file system ``fs``), ready for
    ``pq.read_table``, ``pq.ParquetFile``, ``pyarrow.csv.read_csv`` and the like.

    >>> import pyarrow.parquet as pq
    >>> from robodata.storage import fsspec_filesystem
    >>> path = "uploads/episode_000000/states.parquet"
    >>> pq.read_table(arrow_input(fsspec_filesystem(path), path)).num_rows
    197
    """
    # The caller's storage step names the failure; here only the deadline (the environment's).
    return call_with_deadline(_uri(fs, path), None, _read_whole, fs, path)


def _read_whole(fs, path: str) -> pa.BufferReader:
    sink = pa.BufferOutputStream()  # Arrow's memory: no Python object for its threads to release
    with fs.open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            sink.write(chunk)
    return pa.BufferReader(sink.getvalue())


def _uri(fs, path: str) -> str:
    """``path`` as a URI (fsspec lists remote paths without their protocol), so that the
    deadline applies to a remote store."""
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return path if "://" in path or protocol in ("file", "local") else f"{protocol}://{path}"
