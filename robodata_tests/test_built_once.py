"""The suite's shared session data (robodata_tests/fixtures/built_once.py): built once per code
version, rebuilt after an interrupted build, and private to the session without pytest's cache."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

from robodata_tests.fixtures import built_once as module
from robodata_tests.fixtures.built_once import COMPLETE, STALE_AFTER_S, built_once, code_key


class FakeCache:
    def __init__(self, root: Path):
        self.root = root

    def mkdir(self, name: str) -> Path:
        (self.root / name).mkdir(parents=True, exist_ok=True)
        return self.root / name


def test_data_is_built_once_and_an_interrupted_build_again(tmp_path, tmp_path_factory):
    config = SimpleNamespace(cache=FakeCache(tmp_path / "cache"))
    builds = []

    def build(folder: Path) -> None:
        builds.append(folder)
        (folder / "data.txt").write_text(str(len(builds)))

    first = built_once(config, tmp_path_factory, "things", build)
    again = built_once(config, tmp_path_factory, "things", build)
    assert first == again == tmp_path / "cache" / "robodata-data" / f"things-{code_key()}"
    assert (first / "data.txt").read_text() == "1" and len(builds) == 1

    (first / COMPLETE).unlink()  # as a build killed half-way leaves it
    (first / "half-written").touch()
    rebuilt = built_once(config, tmp_path_factory, "things", build)
    assert rebuilt == first and len(builds) == 2
    assert sorted(p.name for p in rebuilt.iterdir()) == [COMPLETE, "data.txt"]


def test_data_for_other_code_is_removed_once_an_hour_old(tmp_path, tmp_path_factory, monkeypatch):
    config = SimpleNamespace(cache=FakeCache(tmp_path / "cache"))
    base = config.cache.mkdir("robodata-data")
    recent, old = base / f"things-{'a' * 16}", base / f"things-{'b' * 16}"
    other_name = base / f"more-things-{'c' * 16}"
    for folder in (recent, old, other_name):
        folder.mkdir()
    hours_ago = time.time() - STALE_AFTER_S - 60
    os.utime(old, (hours_ago, hours_ago))
    os.utime(other_name, (hours_ago, hours_ago))
    built_once(config, tmp_path_factory, "things", lambda folder: None)
    assert sorted(p.name for p in base.iterdir() if p.is_dir()) == sorted(
        [recent.name, other_name.name, f"things-{code_key()}"]
    )


def test_without_pytests_cache_each_session_builds_its_own(tmp_path_factory):
    config = SimpleNamespace(cache=None)
    folder = built_once(config, tmp_path_factory, "things", lambda f: (f / "x").write_text("x"))
    assert folder.is_relative_to(tmp_path_factory.getbasetemp()) and (folder / "x").read_text() == "x"
    assert not list(folder.glob(COMPLETE))


def test_the_key_follows_the_code(monkeypatch, tmp_path):
    (tmp_path / "robodata").mkdir()
    (tmp_path / "robodata_tests").mkdir()
    for name in ("conftest.py", "pyproject.toml", "README.md"):
        (tmp_path / name).write_text("")
    source, packaged = tmp_path / "robodata" / "x.py", tmp_path / "robodata" / "dagster.yaml"
    source.write_text("A = 1\n")
    packaged.write_text("a: 1\n")
    monkeypatch.setattr(module, "REPO", tmp_path)
    module.code_key.cache_clear()
    try:
        keys = [code_key()]
        # the code, a file the wheel ships, the wheel's metadata
        for changed in (source, packaged, tmp_path / "pyproject.toml"):
            changed.write_text(changed.read_text() + "# changed\n")
            module.code_key.cache_clear()
            keys.append(code_key())
        assert len(set(keys)) == len(keys)
    finally:
        module.code_key.cache_clear()
