"""Read-path benchmark: the figures of ``robodata.measure`` (sequential decode, single-frame and
batched random reads against the decode bound, whole rows, windows, the numpy training loader)
on a given dataset or fresh sample data. Run ``robodata bench readpath`` or
``python -m benchmarks readpath``.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from tqdm import tqdm

from robodata.ingest import ingest_episode
from robodata.measure import format_table, measure_reads


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, help="an existing dataset; default: fresh sample data")
    p.add_argument("--episodes", type=int, default=4, help="sample episodes to generate (without --dataset)")
    p.add_argument("--seconds", type=float, default=6.0, help="length of each sample episode")
    p.add_argument("--samples", type=int, default=200, help="random reads timed per measurement")


def main(args: argparse.Namespace) -> int:
    uri = args.dataset
    if uri is None:
        from robodata.sample_data import write_sample_uploads

        workdir = tempfile.mkdtemp(prefix="robodata-readpath-")
        uri = os.path.join(workdir, "dataset")
        uploads = write_sample_uploads(os.path.join(workdir, "uploads"), args.episodes, seconds=args.seconds)
        for upload in tqdm(uploads, desc="ingest sample data", unit="episode"):
            ingest_episode(str(upload), uri)
    print(format_table(measure_reads(uri, samples=args.samples, progress=True)))
    return 0
