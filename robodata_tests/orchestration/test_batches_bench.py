"""``robodata bench batches`` (benchmarks/orchestration/batches.py): the same episodes through
Dagster per episode and per batch, with the runs and Lance versions each leaves."""


def test_bench_batches_prints_runs_and_versions_of_both_partitionings(capsys):
    from argparse import Namespace

    from benchmarks.orchestration.batches import main

    assert main(Namespace(episodes=[2], seconds=0.5)) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    # episodes, partitioning, runs, partitions, ..., frames version, gops version: one commit per episode
    assert [(r[0], r[1], r[2], r[3], r[6], r[7]) for r in rows] == [
        ("2", "episode", "2", "2", "2", "2"),
        ("2", "batch", "1", "1", "2", "2"),
    ]
