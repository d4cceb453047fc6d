"""The three interop commands end to end, and a bad source's message on stderr with exit code 2."""

from __future__ import annotations

import robodata
from robodata.cli import main

from .test_hdf5_import import STEPS, _write_episode


def test_import_hdf5_export_and_import_lerobot_commands(tmp_path, capsys):
    folder = tmp_path / "aloha"
    folder.mkdir()
    for n in (0, 1):
        _write_episode(folder / f"episode_{n}.hdf5", n, compress=bool(n))
    dataset, lerobot, back = (str(tmp_path / name) for name in ("ds", "lerobot", "back"))

    assert main(["import-hdf5", str(folder / "episode_*.hdf5"), dataset, "--task", "insertion"]) == 0
    assert "imported episodes [0, 1] (48 rows)" in capsys.readouterr().out
    assert main(["export-lerobot", dataset, lerobot, "--episodes-per-file", "1"]) == 0
    assert f"2 episodes, {2 * STEPS} frames at 50 fps" in capsys.readouterr().out
    assert main(["import-lerobot", lerobot, back, "--episodes", "1"]) == 0
    assert "imported episodes [1]" in capsys.readouterr().out
    assert robodata.open(back).episodes()["task"].to_pylist() == ["insertion"]

    assert main(["import-lerobot", str(tmp_path / "nothing"), str(tmp_path / "never")]) == 2
    assert f"{tmp_path / 'nothing'}/meta/info.json: is missing" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()
