"""`robodata register-uploads`: one partition per complete upload in $DAGSTER_HOME's instance."""

import dagster as dg

from robodata.cli import main
from robodata.orchestration import prepare_dagster_home
from robodata_tests.orchestration.conftest import EPISODE_KEYS


def test_register_uploads_adds_each_complete_upload_once(store, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    prepare_dagster_home(tmp_path / "home")
    (tmp_path / "uploads" / EPISODE_KEYS[2] / "episode.json").unlink()  # not complete yet
    args = ["register-uploads", "--dataset", store.root, "--uploads", store.uploads_root]
    assert main(args) == 0 and main(args) == 0
    assert capsys.readouterr().out.split() == EPISODE_KEYS[:2] * 2
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions("episodes") == EPISODE_KEYS[:2]


def test_register_uploads_needs_dagster_home(store, monkeypatch, capsys):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert main(["register-uploads", "--uploads", store.uploads_root]) == 2
    assert "DAGSTER_HOME is not set" in capsys.readouterr().err
