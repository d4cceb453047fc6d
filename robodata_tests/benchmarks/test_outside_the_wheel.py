"""The benchmarks live beside the package, not in it: setuptools packages robodata/ only, and the
product finds benchmarks/ only in a source checkout (the CLI's bench group, the benchmark_report
asset's full and peers runs and the demo say so when it is absent; the asset's own read figures
come from robodata.measure, robodata_tests/measure/test_report_from_wheel.py)."""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

import pytest
from setuptools import find_namespace_packages

import robodata._source_checkout as checkout
from benchmarks.__main__ import SCENARIOS
from benchmarks.__main__ import main as run_scenario
from robodata.cli import COMMANDS, main
from robodata.errors import BenchmarksUnavailableError

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_packages_robodata_and_no_benchmark_code():
    # What `[tool.setuptools.packages.find]` selects (namespace packages included, its default).
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_namespace_packages(where=str(ROOT), include=found["include"], exclude=found.get("exclude", ()))
    assert {"robodata", "robodata.codec", "robodata.reader", "robodata.orchestration.defs"} <= set(packages)
    assert [p for p in packages if not p.startswith("robodata.") and p != "robodata"] == []
    assert not any("bench" in p for p in packages), packages
    assert (ROOT / "benchmarks" / "__main__.py").is_file()


@pytest.fixture
def no_checkout(tmp_path, monkeypatch):
    """robodata as a wheel installs it: nothing named benchmarks beside the package."""
    monkeypatch.setattr(checkout, "CHECKOUT", tmp_path / "site-packages")


def test_in_a_checkout_the_benchmarks_are_found():
    checkout.require_benchmarks("x")  # no error
    assert checkout.benchmarks_available()


def test_without_a_checkout_the_cli_prints_one_line_and_exits_2(no_checkout, capsys):
    assert not checkout.benchmarks_available()
    assert main(["bench", "out", "--peers", ".peers-venv"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "robodata bench: the benchmarks ship with robodata's source checkout (its benchmarks/ folder), "
        "not with the installed package; run them from a clone of the repository\n"
    )


@pytest.mark.dagster
@pytest.mark.parametrize("asked", [{"full": True}, {"peers_venv": ".peers-venv"}])
def test_without_a_checkout_the_full_benchmark_fails_saying_why_before_measuring(no_checkout, tmp_path, asked):
    from robodata.orchestration.defs.reports.benchmark import BenchmarkConfig, benchmark_report
    from robodata.orchestration.defs.resources import DatasetStore

    store = DatasetStore(root=str(tmp_path / "ds"), uploads_root=str(tmp_path / "uploads"))  # no dataset there
    with pytest.raises(BenchmarksUnavailableError, match="^benchmark_report: the benchmarks ship with robodata's"):
        benchmark_report(config=BenchmarkConfig(**asked), store=store)


@pytest.mark.dagster
@pytest.mark.slow
def test_without_a_checkout_the_demo_still_reports_the_read_figures(no_checkout, tmp_path, monkeypatch, capsys):
    from robodata.orchestration._demo import run_demo

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "unused"))  # run_demo points it at its own; restored after
    summary = run_demo(str(tmp_path / "demo"), episodes=1, seconds=1.0)
    out = capsys.readouterr().out
    assert "skipped" not in out
    assert f"benchmark report: {tmp_path.resolve()}/demo/dataset/reports/readpath_v{summary['version']}.md" in out
    assert summary["episodes"] == 1 and "demo-run-" in next(iter(summary["tags"]))


def test_a_foreign_benchmarks_package_is_not_taken_for_the_checkouts(tmp_path, monkeypatch):
    fake = tmp_path / "checkout"
    (fake / "benchmarks").mkdir(parents=True)
    (fake / "benchmarks" / "__init__.py").write_text("")
    (fake / "pyproject.toml").write_text("")
    monkeypatch.setattr(checkout, "CHECKOUT", fake)
    monkeypatch.setattr(sys, "path", list(sys.path))  # restored after the test
    with pytest.raises(BenchmarksUnavailableError, match=r"another package named 'benchmarks' \(.*\) hides"):
        checkout.require_benchmarks("robodata bench")


def test_robodata_bench_runs_the_scenario_it_names(capsys):
    with pytest.raises(SystemExit) as done:
        main(["bench", "readpath", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: robodata bench readpath") and "--samples SAMPLES" in out
    with pytest.raises(SystemExit):
        main(["bench", "out_dir", "--help"])  # no scenario named: the report (peers form)
    assert "usage: robodata bench report" in capsys.readouterr().out


def test_no_scenario_lists_them_all_and_the_cli_names_each(capsys):
    assert run_scenario([], prog="robodata bench") == 2
    listing = capsys.readouterr().err
    configure, _ = COMMANDS["bench"]
    parser = argparse.ArgumentParser()
    configure(parser)
    for name in SCENARIOS:
        assert f"\n  {name} " in listing
        assert name in parser.description
    assert not [name for name in COMMANDS if name.startswith("bench-")]
