"""Every Lance and fsspec call in the package runs under the storage deadline, or is listed here
with the reason it need not (or does not yet): the test walks the package's syntax trees, finds
each call that reaches storage, and fails on one that is neither under the deadline helper
(``robodata.storage._deadlines.call_with_deadline``, through ``storage_call``,
``@in_storage_step`` or ``RoboDataset`` reads) nor listed. A new call site cannot slip past it;
a listed one that went away must leave the list.

A call is under the deadline when it is not called in place but handed to the helper
(``storage_call(action, uri, options, frames.take, rows)``), or when the function it is in runs
under the helper (decorated with ``@in_storage_step``, or passed to it by name)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "robodata"
# The demo runs on a local folder it makes itself.
SKIPPED = ("orchestration/_demo.py",)
HELPERS = {
    "call_with_deadline",
    "storage_call",
    "_read",
    "retry_commit",
    "retry_transient",
}  # _read: RoboDataset's; retry_commit, retry_transient: each attempt
DECORATORS = {"in_storage_step"}

# Methods of a Lance dataset, scanner, builder or tags object that talk to storage.
LANCE_METHODS = {
    "to_table", "take", "take_blobs", "read_blobs", "scanner", "count_rows", "merge_insert", "execute",
    "checkout_version", "cleanup_old_versions", "compact_files", "add_columns", "create_scalar_index",
    "create_index", "to_batches", "get_fragments", "versions", "alter_columns", "drop_columns", "restore",
    "delete", "insert", "commit", "list", "create", "write_dataset", "dataset",
}  # fmt: skip
FS_METHODS = {
    "open", "ls", "find", "info", "exists", "isdir", "isfile", "cat", "cat_file", "rm", "rm_file", "put",
    "put_file", "get", "get_file", "glob", "walk", "makedirs", "mkdir", "pipe", "pipe_file", "mv", "copy",
    "size", "touch", "du", "head", "modified",
}  # fmt: skip
# Receivers that are not storage objects although a method name matches.
NOT_STORAGE = ("np", "pa", "pc", "torch", "self.__dict__", "records.staged", "json", "os", "Path")

# (module, function, call) -> why it runs without the deadline helper: it touches only a local
# path, builds an operation without I/O, reads a manifest already in memory, or runs under the
# helper in a way the walk cannot see. Nothing is listed as merely pending.
UNWRAPPED: dict[tuple[str, str, str], str] = {
    ("ingest/_one_copy.py", "in_storage_order", "table.take"): "an Arrow table in memory: no request",
    (
        "edits/_upkeep.py",
        "_compact",
        "open_table(table_uri, storage_options).get_fragments",
    ): "the fragments of the manifest open_table read (under the deadline): no request",
    (
        "format/_keys.py",
        "keyed_merge",
        "table.merge_insert",
    ): "builds a merge, no I/O: its execute runs under the caller's deadline (retry_commit, storage_call)",
    ("format/_tables.py", "append_or_create", "lance.LanceOperation.Append"): "builds an operation, no I/O",
    (
        "ingest/_video_source.py",
        "_open",
        "fs.open",
    ): "opens an upload's video: when probing, under read_upload's deadline (ingest/_upload.py); when encoding, each read carries botocore's timeout (one attempt): a wall-clock deadline would cut a long encode",
    ("ingest/_video_source.py", "probe_camera", "fs.info"): "called only by read_upload, under its @in_storage_step",
    (
        "integrity/_episode_checks.py",
        "check_sample_decodes",
        "ds.to_table",
    ): "a RoboDataset method: under the deadline inside",
    (
        "integrity/_frames_checksums.py",
        "_data_files",
        "frames.get_fragments",
    ): "the fragments of the manifest already read: no request",
    ("integrity/_frames_checksums.py", "record_frames_checksums", "fs.makedirs"): "local only",
    (
        "storage/_lance_errors.py",
        "damaged_data_files",
        "table.get_fragments",
    ): "the fragments of the manifest lance.dataset read (under the deadline): no request",
    ("integrity/_gop_leases.py", "write_record", "fs.makedirs"): "local only",
    ("lerobot/_export.py", "_plan", "ds.to_table"): "a RoboDataset method: under the deadline inside",
    ("storage/_put_folder.py", "put_folder", "fs.makedirs"): "local only",
    (
        "storage/_uploads.py",
        "_content_digest",
        "fs.open",
    ): "a file listed without an ETag: local only (S3 lists one per object)",
    ("_summary.py", "dataset_summary", "ds.versions"): "a RoboDataset method: under the deadline inside",
    (
        "lerobot/_version_stats.py",
        "lerobot_stats_of",
        "ds.to_table",
    ): "a RoboDataset method: under the deadline inside",
    (
        "lerobot/_version_stats.py",
        "lerobot_stats_of",
        "ds.to_table(columns=columns).take",
    ): "Arrow's take on rows already read",
    ("torch/_sampler.py", "for_dataset", "dataset.to_table"): "a RoboDataset method: under the deadline inside",
    ("view/_episode_rows.py", "load_episode", "ds.to_table"): "a RoboDataset method: under the deadline inside",
}


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def _is_storage_call(call: ast.Call) -> bool:
    if not isinstance(call.func, ast.Attribute):
        return False
    receiver, name = _text(call.func.value), call.func.attr
    if receiver.startswith(NOT_STORAGE):
        return False
    if receiver == "lance" or receiver.startswith("lance."):
        return name in LANCE_METHODS or name[:1].isupper() and name != "LanceOperation"
    lance_like = any(k in receiver.lower() for k in ("frames", "gops", "ds", "dataset", "table", "lance", "tags"))
    fs_like = receiver.endswith(("fs", "filesystem")) or "fsspec_filesystem(" in receiver
    return (name in LANCE_METHODS and lance_like) or (name in FS_METHODS and fs_like)


class _Module(ast.NodeVisitor):
    """One module's storage call sites, the names it hands to the deadline helper, and which of
    its functions call which (by name)."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.stack: list[ast.AST] = []
        self.handed: set[str] = set()
        self.calls: dict[str, set[str]] = {}  # function name -> names it calls
        self.functions: dict[str, ast.AST] = {}
        self.sites: list[tuple[str, str, list[ast.AST]]] = []  # (function path, call, enclosing defs)

    def generic_visit(self, node: ast.AST) -> None:
        self.stack.append(node)
        super().generic_visit(node)
        self.stack.pop()

    def _defs(self) -> list[ast.AST]:
        return [
            n for n in self.stack if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef)
        ]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.functions.setdefault(node.name, node)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if callee in HELPERS:
            for arg in node.args:
                if isinstance(arg, ast.Name | ast.Attribute):
                    self.handed.add(_text(arg).split(".")[-1])
        defs = self._defs()
        # A call runs when its innermost function runs (a nested function handed to the helper
        # makes its calls under it, not its outer function); in a lambda, whenever any
        # enclosing function may run it.
        functions = [d for d in defs if isinstance(d, ast.FunctionDef | ast.AsyncFunctionDef)]
        for d in functions if defs and isinstance(defs[-1], ast.Lambda) else functions[-1:]:
            self.calls.setdefault(d.name, set()).add(callee)
        if _is_storage_call(node):
            name = ".".join(getattr(f, "name", "<lambda>") for f in defs if not isinstance(f, ast.ClassDef))
            self.sites.append((name or "<module>", _text(node.func), defs))
        self.generic_visit(node)


def _covered_functions(module: _Module, handed: set[str]) -> set[str]:
    """Functions of ``module`` that run under the helper: decorated with it, handed to it
    (by name, anywhere in the package; a class handed covers its methods), or private ones that
    only functions under it call."""
    covered = set()
    for name, node in module.functions.items():
        decorators = {_text(d.func if isinstance(d, ast.Call) else d).split(".")[-1] for d in node.decorator_list}
        if decorators & DECORATORS or name in handed:
            covered.add(name)
    changed = True
    while changed:
        changed = False
        for name in module.functions:
            callers = {caller for caller, callees in module.calls.items() if name in callees and caller != name}
            if name not in covered and name.startswith("_") and callers and callers <= covered:
                covered.add(name)
                changed = True
    return covered


def _under_deadline(defs: list[ast.AST], covered: set[str], handed: set[str], lambdas: set[int]) -> bool:
    for node in defs:
        if isinstance(node, ast.Lambda):
            if id(node) in lambdas:
                return True
        elif node.name in covered or node.name in handed:
            return True
    return False


def _modules() -> list[tuple[_Module, ast.AST]]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name.startswith(SKIPPED):
            continue
        tree = ast.parse(path.read_text())
        module = _Module(name)
        module.visit(tree)
        modules.append((module, tree))
    return modules


def _sites_of(modules: list[tuple[_Module, ast.AST]]) -> dict[tuple[str, str, str], bool]:
    handed = set().union(*(m.handed for m, _ in modules))
    found: dict[tuple[str, str, str], bool] = {}
    for module, tree in modules:
        covered = _covered_functions(module, handed)
        lambdas = {
            id(arg)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in HELPERS
            for arg in node.args
            if isinstance(arg, ast.Lambda)
        }
        for function, call, defs in module.sites:
            key = (module.module, function, call)
            found[key] = found.get(key, True) and _under_deadline(defs, covered, handed, lambdas)
    return found


def storage_call_sites() -> dict[tuple[str, str, str], bool]:
    """Every storage call in the package -> whether it runs under the deadline helper."""
    return _sites_of(_modules())


def test_every_storage_call_is_under_the_deadline_or_listed():
    sites = storage_call_sites()
    assert len(sites) > 20  # the walk finds the package's calls (a broken walk finds none)
    bare = {site for site, covered in sites.items() if not covered}
    new = sorted(bare - UNWRAPPED.keys())
    gone = sorted(UNWRAPPED.keys() - bare)
    assert not new, "storage calls outside the deadline helper (wrap them in storage_call):\n" + "\n".join(
        map(str, new)
    )
    assert not gone, "listed calls that are wrapped or gone now (remove them from UNWRAPPED):\n" + "\n".join(
        map(str, gone)
    )


def test_the_walk_sees_a_bare_call_and_a_wrapped_one():
    source = """
def bare(frames):
    return frames.to_table()

def wrapped(uri, options, frames):
    return storage_call("reading", uri, options, frames.to_table)

@in_storage_step("listing")
def listing(uri, options):
    return _names(fsspec_filesystem(uri, options), uri)

def _names(fs, uri):
    return fs.ls(uri)
"""
    module = _Module("example.py")
    tree = ast.parse(source)
    module.visit(tree)
    assert _sites_of([(module, tree)]) == {
        ("example.py", "bare", "frames.to_table"): False,
        ("example.py", "_names", "fs.ls"): True,
    }
