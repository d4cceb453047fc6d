"""Hold writers at their commits so a test can force an interleaving instead of hoping for one.

``held_commits`` patches Lance's two commit entry points robodata uses (``merge_insert(...).
execute`` and ``LanceDataset.commit``): the first commit each thread makes to a table waits until
every party has reached its own first commit to that table (a barrier), so all of them plan on
the same version and then race. Later commits of the same thread (retries) pass straight through.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import lance
from lance.dataset import MergeInsertBuilder


def _table_of(uri: str) -> str:
    return str(uri).rstrip("/").rsplit("/", 1)[-1]


class CommitGate:
    """Per table, a barrier the first commit of each of ``parties`` threads waits at."""

    def __init__(self, parties: int, tables: tuple[str, ...]) -> None:
        self.parties = parties
        self.barriers = {t: threading.Barrier(parties, timeout=120) for t in tables}
        self._seen = threading.local()
        self.held = 0

    def wait(self, uri: str) -> None:
        table = _table_of(uri)
        seen = getattr(self._seen, "tables", None)
        if seen is None:
            seen = self._seen.tables = set()
        if table not in self.barriers or table in seen:
            return
        seen.add(table)
        self.held += 1
        self.barriers[table].wait()


@contextlib.contextmanager
def held_commits(monkeypatch, parties: int = 2, tables=("gops.lance", "frames.lance")) -> Iterator[CommitGate]:
    gate = CommitGate(parties, tuple(tables))
    original_merge_insert = lance.LanceDataset.merge_insert
    original_execute = MergeInsertBuilder.execute
    original_commit = lance.LanceDataset.commit
    uris: dict[int, str] = {}

    def merge_insert(self, on=None):
        builder = original_merge_insert(self, on)
        uris[id(builder)] = self.uri
        return builder

    def execute(self, data_obj, *, schema=None):
        gate.wait(uris.get(id(self), ""))
        return original_execute(self, data_obj, schema=schema)

    def commit(base_uri, operation, *args, **kwargs):
        gate.wait(str(base_uri))
        return original_commit(base_uri, operation, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(lance.LanceDataset, "merge_insert", merge_insert)
        patch.setattr(MergeInsertBuilder, "execute", execute)
        patch.setattr(lance.LanceDataset, "commit", staticmethod(commit))
        yield gate


def run_together(*calls) -> list:
    """Run each zero-argument callable in its own thread; return results (or raise the first error)."""
    results: list = [None] * len(calls)
    errors: list = [None] * len(calls)

    def run(i):
        try:
            results[i] = calls[i]()
        except BaseException as exc:  # handed to the test below
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    for error in errors:
        if error is not None:
            raise error
    return results
