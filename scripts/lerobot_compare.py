"""robodata against LeRobot's own copy of the same episodes, with real LeRobot (Python >= 3.12).

    python scripts/lerobot_compare.py losses WORKDIR [--steps 5]
    python scripts/lerobot_compare.py first-batch WORKDIR [--workers 2 --batch-size 32 --repeat 1]
    python scripts/lerobot_compare.py orders WORKDIR [--steps 200 --batch-size 8 --workers 2 --every 20
                                                      --camera-size 64x48]
    python scripts/lerobot_compare.py loader WORKDIR [--workers 2 --batch-size 32 --epochs 3]
    python scripts/lerobot_compare.py resume WORKDIR [--dataset PATH --order decode_once
                                                      --before 4,2,2 --after 6,4,1 --save-at 5]

Both make sample data in WORKDIR (3 cameras, 100 Hz rows), ingest it into a robodata dataset,
tag it ``compare`` and export that version with ``robodata export-lerobot`` (lossless RGB video,
so both read the same pixels), unless WORKDIR already holds them.

``losses`` runs the same ``lerobot-train`` command (a small ACT policy on CPU, seed 1, no
pretrained backbone) twice: through ``robodata-train`` on the robodata dataset pinned to the tag,
and as ``lerobot-train`` on the export; it prints the loss of every step of both and the largest
difference, and exits 1 when that exceeds ``--tolerance``. robodata-train reads in LeRobot's own
uniform order there (``ROBODATA_TRAIN_ORDER=uniform``), so both see the same items at every step.

``orders`` runs ``robodata-train`` twice on the robodata dataset with the same command and seed:
in its default decode-once block order and in the uniform order (``ROBODATA_TRAIN_ORDER=uniform``),
with ``--num_workers`` spawned DataLoader workers, and prints the mean loss of every ``--every``
steps of both (a markdown table), and each run's samples/s as LeRobot logs them (the median over
the second half of the steps) and wall-clock seconds; ``--seed`` is both runs' seed. Its sample episodes are recorded at ``--camera-size`` (every
camera; default 64x48) so a CPU trains a few hundred steps in minutes: WORKDIR must not hold a
dataset of another size.

``loader`` times a LeRobot user's DataLoader alone over ``LeRobotCompatDataset`` (uint8 frames at
the recorded size, ``--workers`` spawned workers, persistent): ``shuffle=True`` (uniform) and
``sampler=dataset.item_sampler(...)`` (the decode-once order), each in a fresh process; it prints
items/s of every epoch after the first (the first includes the workers' start) and the GOPs the
workers read for decoding per epoch.

``resume`` trains with ``robodata-train`` (the small ACT of ``losses``, ``--robodata.order``
``--order``), checkpointing after ``--save-at`` steps in the layout ``--before`` (batch size,
workers, processes), then resumes that checkpoint (``--resume=true``) in the layout ``--after``
to two batches into the next epoch, checkpointing once at its end; more than one process is
``torchrun --standalone --nproc_per_node=P`` as docs/training.md documents. Each process records
the ``index`` of every batch LeRobot's training loop takes (``record-train``: lerobot-train's
``cycle`` with the pass over the DataLoader noted); it prints, as JSON, the items of the resumed
epoch read twice and never (both 0 when the resume is exact). ``--dataset`` trains on a copy of
that dataset, else on the sample data; ``--records DIR`` keeps the records. The policy sees
``--frame-size`` frames (``--robodata.frame_size``, default 64x48, so that a CPU step takes a
fraction of a second; the order does not depend on it).

``first-batch`` prints the seconds from creating a DataLoader (``num_workers`` workers, default
collate, shuffled) to its first batch for ``LeRobotCompatDataset`` and for ``LeRobotDataset``
on the export, each in a fresh process, with the platform's default start method (fork on
Linux: a plain ``DataLoader(num_workers=N)``) and with lerobot-train's default (spawn);
``--repeat R`` runs each R times and prints the median, min and max.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TAG = "compare"
LOSS = re.compile(r"step:(\S+) .*?loss:([0-9.eE+-]+)")


def prepare(work: Path, episodes: int, seconds: float, export_too: bool = True) -> tuple[str, str]:
    """The robodata dataset (tagged) and (unless not ``export_too``) its LeRobot export under ``work``."""
    import robodata
    from robodata.lerobot import export_lerobot
    from robodata.sample_data import write_sample_uploads

    dataset, export = work / "robodata", work / "lerobot"
    if not (dataset / "frames.lance").is_dir():
        shutil.rmtree(dataset, ignore_errors=True)
        for upload in write_sample_uploads(work / "uploads", episodes=episodes, seconds=seconds, seed=3):
            robodata.ingest_episode(str(upload), str(dataset))
    ds = robodata.open(str(dataset))
    if TAG not in ds.tags:
        ds.tag(TAG)
    if export_too and not (export / "meta" / "info.json").is_file():
        shutil.rmtree(export, ignore_errors=True)
        export_lerobot(
            str(dataset), export, version=TAG, vcodec="libx264rgb", pix_fmt="rgb24", crf=0, g=2,
            preset="ultrafast", progress=False,
        )  # fmt: skip
    return str(dataset), str(export)


def train_args(
    steps: int,
    output: Path,
    batch_size: int = 4,
    workers: int = 0,
    log_freq: int = 1,
    seed: int = 1,
    save_freq: int | None = None,
) -> list[str]:
    saving = ["--save_checkpoint=false"] if save_freq is None else [f"--save_freq={save_freq}"]
    return [
        "--policy.type=act",
        "--policy.device=cpu",
        "--policy.push_to_hub=false",
        "--policy.pretrained_backbone_weights=null",  # no download; the same random init for both
        "--policy.chunk_size=10",
        "--policy.n_action_steps=10",
        "--policy.dim_model=64",
        "--policy.dim_feedforward=128",
        "--policy.n_encoder_layers=1",
        "--policy.n_decoder_layers=1",
        f"--steps={steps}",
        f"--batch_size={batch_size}",
        f"--num_workers={workers}",
        f"--log_freq={log_freq}",
        *saving,
        f"--seed={seed}",
        "--wandb.enable=false",
        f"--output_dir={output}",
    ]


def run_training(command: list[str], log: Path, **env_extra: str) -> list[float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]), **env_extra)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{command[:3]} failed (exit {done.returncode}); its log: {log}")
    return [float(m.group(2)) for m in LOSS.finditer(done.stdout + done.stderr)]


SAMPLES_PER_S = re.compile(r"smp/s:([0-9.]+)")


def orders(args: argparse.Namespace) -> int:
    from robodata import sample_data

    work = Path(args.workdir)
    width, height = (int(n) for n in args.camera_size.split("x"))
    for camera in sample_data.CAMERAS:
        sample_data.CAMERAS[camera] = (width, height)
    dataset, _ = prepare(work, args.episodes, args.seconds, export_too=False)
    curves, speeds, walls = {}, {}, {}
    for order in ("block", "uniform"):
        out = work / f"train-{order}"
        shutil.rmtree(out, ignore_errors=True)
        log = work / f"robodata-train-{order}-seed{args.seed}.log"
        started = time.perf_counter()
        curves[order] = run_training(
            [sys.executable, "-m", "robodata.lerobot.train", f"--dataset.repo_id={dataset}",
             f"--dataset.revision={TAG}",
             *train_args(args.steps, out, batch_size=args.batch_size, workers=args.workers, seed=args.seed)],
            log,
            ROBODATA_TRAIN_ORDER=order,
        )  # fmt: skip
        walls[order] = time.perf_counter() - started
        # the second half of the run: after the workers' start and the first epoch's warm-up
        rates = [float(r) for r in SAMPLES_PER_S.findall(log.read_text())][args.steps // 2 :]
        speeds[order] = statistics.median(rates) if rates else float("nan")
        if len(curves[order]) != args.steps:
            raise SystemExit(f"{order}: expected {args.steps} logged losses, got {len(curves[order])} ({log})")
    print(json.dumps({"step_losses": curves, "samples_per_s": speeds, "wall_s": walls}))
    print("| steps | block order loss (mean) | uniform order loss (mean) |")
    print("| --- | --- | --- |")
    means = {}
    for first in range(0, args.steps, args.every):
        span = slice(first, first + args.every)
        means[first] = [statistics.mean(curves[o][span]) for o in ("block", "uniform")]
        print(f"| {first + 1}-{min(first + args.every, args.steps)} | {means[first][0]:.3f} | {means[first][1]:.3f} |")
    for order in ("block", "uniform"):
        print(
            f"{order}: {speeds[order]:.1f} samples/s (LeRobot's smp/s, median of the second half), "
            f"{walls[order]:.0f} s wall clock"
        )
    last = statistics.mean(curves["block"][-args.every :]), statistics.mean(curves["uniform"][-args.every :])
    print(f"mean loss of the last {args.every} steps: block {last[0]:.3f}, uniform {last[1]:.3f}")
    return 0


def losses(args: argparse.Namespace) -> int:
    work = Path(args.workdir)
    dataset, export = prepare(work, args.episodes, args.seconds)
    bin_dir = Path(sys.executable).parent
    ours_out, theirs_out = work / "train-robodata", work / "train-lerobot"
    for out in (ours_out, theirs_out):
        shutil.rmtree(out, ignore_errors=True)
    ours = run_training(
        [sys.executable, "-m", "robodata.lerobot.train", f"--dataset.repo_id={dataset}",
         f"--dataset.revision={TAG}", *train_args(args.steps, ours_out)],
        work / "robodata-train.log",
        ROBODATA_TRAIN_ORDER="uniform",  # LeRobot's own order: the same items at every step
    )  # fmt: skip
    theirs = run_training(
        [str(bin_dir / "lerobot-train"), "--dataset.repo_id=local/compare", f"--dataset.root={export}",
         *train_args(args.steps, theirs_out)],
        work / "lerobot-train.log",
    )  # fmt: skip
    if len(ours) != args.steps or len(theirs) != args.steps:
        raise SystemExit(f"expected {args.steps} logged losses, got {len(ours)} (robodata) and {len(theirs)} (LeRobot)")
    worst = max(abs(a - b) for a, b in zip(ours, theirs, strict=True))
    print(json.dumps({"step_losses_robodata": ours, "step_losses_lerobot": theirs, "max_abs_diff": worst}))
    for step, (a, b) in enumerate(zip(ours, theirs, strict=True), start=1):
        print(f"step {step}: robodata-train {a:.3f}  lerobot-train {b:.3f}")
    print(f"largest difference {worst:.3f} (tolerance {args.tolerance})")
    return 0 if worst <= args.tolerance else 1


FIRST_BATCH = """
import sys, time, json
import torch
from torch.utils.data import DataLoader
kind, path, workers, batch, context = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
started = time.perf_counter()
if kind == "robodata":
    from robodata.lerobot import LeRobotCompatDataset
    dataset = LeRobotCompatDataset(path, version="compare", return_uint8=True)
else:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    dataset = LeRobotDataset("local/compare", root=path, return_uint8=True)
opened = time.perf_counter()
loader = DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers,
                    multiprocessing_context=None if context == "default" or not workers else context)
next(iter(loader))
done = time.perf_counter()
print(json.dumps({"open_s": round(opened - started, 2), "first_batch_s": round(done - opened, 2)}))
"""


LOADER = """
import json, os, sys, time
from collections import Counter
from torch.utils.data import DataLoader
from robodata.lerobot import LeRobotCompatDataset
from robodata.torch import worker_context

def count_reads(folder, worker_id):
    from robodata.reader._gop_store import GopStore
    original = GopStore._read_positions
    def counting(self, positions):
        with open(os.path.join(folder, f"{os.getpid()}.txt"), "a") as out:
            out.write(f"{len(positions)}\\n")
        return original(self, positions)
    GopStore._read_positions = counting

if __name__ == "__main__":
    import functools
    order, path, workers, batch, epochs, folder = sys.argv[1:7]
    workers, batch, epochs = int(workers), int(batch), int(epochs)
    dataset = LeRobotCompatDataset(path, version="compare", return_uint8=True)
    options = dict(batch_size=batch, num_workers=workers, multiprocessing_context=worker_context(),
                   persistent_workers=True, worker_init_fn=functools.partial(count_reads, folder))
    if order == "block":
        loader = DataLoader(dataset, sampler=dataset.item_sampler(batch_size=batch, num_workers=workers), **options)
    else:
        loader = DataLoader(dataset, shuffle=True, **options)
    rates, reads = [], []
    for epoch in range(epochs):
        started = time.perf_counter()
        items = sum(len(b["index"]) for b in loader)
        rates.append(items / (time.perf_counter() - started))
        reads.append(sum(int(n) for f in os.listdir(folder) for n in open(os.path.join(folder, f)).read().split()))
        for f in os.listdir(folder):
            os.remove(os.path.join(folder, f))
    print(json.dumps({"items_per_s": rates, "gop_reads": reads, "items": len(dataset)}))
"""


def loader(args: argparse.Namespace) -> int:
    work = Path(args.workdir)
    dataset, _ = prepare(work, args.episodes, args.seconds, export_too=False)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    script = work / "loader_speed.py"
    script.write_text(LOADER)
    print(f"workers={args.workers} batch={args.batch_size}; epochs after the first: items/s, GOPs read to decode")
    print("| order | items/s per epoch | GOP reads per epoch (all workers) |")
    print("| --- | --- | --- |")
    for order in ("uniform", "block"):
        counts = work / f"reads-{order}"
        shutil.rmtree(counts, ignore_errors=True)
        counts.mkdir()
        command = [sys.executable, str(script), order, dataset, str(args.workers), str(args.batch_size),
                   str(args.epochs), str(counts)]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise SystemExit(f"{order} failed: {done.stderr[-2000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        rates = ", ".join(f"{r:.0f}" for r in result["items_per_s"][1:])
        reads = ", ".join(str(n) for n in result["gop_reads"][1:])
        name = "uniform (`shuffle=True`)" if order == "uniform" else "block (`sampler=ds.item_sampler(...)`)"
        print(f"| {name} | {rates} | {reads} |")
    return 0


def first_batch(args: argparse.Namespace) -> int:
    work = Path(args.workdir)
    dataset, export = prepare(work, args.episodes, args.seconds)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    rows = []
    cases = [
        (kind, path, context)
        for context in ("default", "spawn")
        for kind, path in (("robodata", dataset), ("lerobot", export))
    ]
    for kind, path, context in cases:
        runs = []
        for _ in range(args.repeat):
            command = [sys.executable, "-c", FIRST_BATCH, kind, path, str(args.workers), str(args.batch_size), context]
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                raise SystemExit(f"{kind} ({context}) failed: {done.stderr[-2000:]}")
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        rows.append((kind, context, runs))
    default = multiprocessing.get_start_method()
    print(
        f"workers={args.workers} batch={args.batch_size}, {args.repeat} fresh process(es) each; seconds, median [min-max]"
    )
    print("| dataset | start method | open s | DataLoader to first batch s |")
    print("| --- | --- | --- | --- |")
    for kind, context, runs in rows:
        name = "LeRobotCompatDataset" if kind == "robodata" else "LeRobotDataset (export)"
        method = f"{default} (default)" if context == "default" else context
        cells = [spread([run[key] for run in runs]) for key in ("open_s", "first_batch_s")]
        print(f"| {name} | {method} | {cells[0]} | {cells[1]} |")
    return 0


def recording_cycle(records: Path):
    """lerobot-train's ``cycle`` (``lerobot.utils.utils.cycle``: a new pass over the DataLoader when
    one ends) that also appends the ``index`` of every batch it hands the training loop, with the
    pass it belongs to, to ``records/rank<RANK>.jsonl``."""

    def cycle(iterable):
        out = records / f"rank{os.environ.get('RANK', '0')}.jsonl"
        passes = 0
        while True:
            for batch in iterable:
                with out.open("a") as lines:
                    lines.write(json.dumps({"pass": passes, "index": batch["index"].tolist()}) + "\n")
                yield batch
            passes += 1

    return cycle


def record_train(args: argparse.Namespace) -> int:
    """``robodata-train`` with every batch the training loop takes recorded (``recording_cycle``)."""
    from lerobot.scripts import lerobot_train

    from robodata.lerobot import train

    records = Path(args.records)
    records.mkdir(parents=True, exist_ok=True)
    lerobot_train.cycle = recording_cycle(records)
    train.main(args.train_args)
    return 0


def recorded(records: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(records.glob("rank*.jsonl")) for line in f.read_text().splitlines()]


def layout(text: str) -> tuple[int, int, int]:
    batch_size, workers, processes = (int(n) for n in text.split(","))
    return batch_size, workers, processes


def resume(args: argparse.Namespace) -> int:
    import robodata

    work = Path(args.workdir)
    if args.dataset:
        dataset = str(work / "dataset")
        shutil.rmtree(dataset, ignore_errors=True)
        shutil.copytree(args.dataset, dataset)  # robodata-train tags the version it reads
    else:
        dataset, _ = prepare(work, args.episodes, args.seconds, export_too=False)
    items = len(robodata.open(dataset))
    records = Path(args.records) if args.records else work / "records"
    out = work / "train-resume"
    for folder in (records, out):
        shutil.rmtree(folder, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))

    def robodata_train(run: str, place: tuple[int, int, int], steps: int, *extra: str) -> None:
        batch_size, workers, processes = place
        launcher = [sys.executable]
        if processes > 1:  # docs/training.md's multi-process command
            launcher += ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
        command = [*launcher, str(Path(__file__).resolve()), "record-train", str(records / run), "--", *extra,
                   f"--steps={steps}", f"--batch_size={batch_size}", f"--num_workers={workers}",
                   f"--robodata.order={args.order}", f"--robodata.frame_size={args.frame_size}"]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
        (work / f"resume-{run}.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise SystemExit(f"the {run} run failed (exit {done.returncode}); its log: {work / f'resume-{run}.log'}")

    before, after = layout(args.before), layout(args.after)
    first_args = train_args(args.save_at, out, seed=args.seed, save_freq=args.save_at)
    robodata_train("first", before, args.save_at, f"--dataset.repo_id={dataset}", *first_args)
    first = [i for r in recorded(records / "first") if r["pass"] == 0 for i in r["index"]]
    rounds = -(-(items - len(first)) // (after[0] * after[2]))
    config = out / "checkpoints" / "last" / "pretrained_model" / "train_config.json"
    # --save_freq=0: the resumed run checkpoints once, after its last step (not a 130 MB checkpoint
    # of the small ACT every --save-at steps)
    robodata_train(
        "second", after, args.save_at + rounds + 2, f"--config_path={config}", "--resume=true", "--save_freq=0"
    )
    second = recorded(records / "second")
    if not any(r["pass"] == 1 for r in second):
        raise SystemExit(f"the resumed run did not reach the next epoch ({records / 'second'})")
    epoch = first + [i for r in second if r["pass"] == 0 for i in r["index"]]
    counts = {i: epoch.count(i) for i in set(epoch)}
    result = {
        "order": args.order,
        "items": items,
        "before": dict(zip(("batch_size", "workers", "processes"), before, strict=True)),
        "after": dict(zip(("batch_size", "workers", "processes"), after, strict=True)),
        "read_before_the_checkpoint": len(first),
        "read_after_the_resume": len(epoch) - len(first),
        "read_twice": sum(n - 1 for n in counts.values()),
        "never_read": len(set(range(items)) - set(counts)),
    }
    print(json.dumps(result))
    return 0


def spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]}"
    return f"{statistics.median(values):.2f} [{min(values)}-{max(values)}]"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    record = sub.add_parser("record-train", help="robodata-train, recording the batches its loop takes")
    record.add_argument("records")
    record.add_argument("train_args", nargs=argparse.REMAINDER)
    for name in ("losses", "first-batch", "orders", "loader", "resume"):
        s = sub.add_parser(name)
        s.add_argument("workdir")
        s.add_argument("--episodes", type=int, default=3)
        s.add_argument("--seconds", type=float, default=2.0)
    sub.choices["losses"].add_argument("--steps", type=int, default=5)
    sub.choices["losses"].add_argument("--tolerance", type=float, default=0.002)
    sub.choices["orders"].add_argument("--steps", type=int, default=200)
    sub.choices["orders"].add_argument("--batch-size", type=int, default=8)
    sub.choices["orders"].add_argument("--workers", type=int, default=2)
    sub.choices["orders"].add_argument("--every", type=int, default=20)
    sub.choices["orders"].add_argument("--camera-size", default="64x48")
    sub.choices["orders"].add_argument("--seed", type=int, default=1)
    sub.choices["loader"].add_argument("--workers", type=int, default=2)
    sub.choices["loader"].add_argument("--batch-size", type=int, default=32)
    sub.choices["loader"].add_argument("--epochs", type=int, default=3)
    sub.choices["first-batch"].add_argument("--workers", type=int, default=2)
    sub.choices["first-batch"].add_argument("--batch-size", type=int, default=32)
    sub.choices["first-batch"].add_argument("--repeat", type=int, default=1)
    sub.choices["resume"].add_argument("--dataset", help="train on a copy of this robodata dataset")
    sub.choices["resume"].add_argument("--order", default="decode_once", choices=("decode_once", "uniform"))
    sub.choices["resume"].add_argument("--before", default="4,2,2", help="batch size,workers,processes")
    sub.choices["resume"].add_argument("--after", default="6,4,1", help="batch size,workers,processes")
    sub.choices["resume"].add_argument("--save-at", type=int, default=5)
    sub.choices["resume"].add_argument(
        "--frame-size", default="64x48", help="the policy's frames (--robodata.frame_size): small, for a quick CPU step"
    )
    sub.choices["resume"].add_argument("--seed", type=int, default=1)
    sub.choices["resume"].add_argument("--records", help="where the runs record their batches")
    args = p.parse_args()
    if args.command == "record-train":
        args.train_args = [a for a in args.train_args if a != "--"]
        return record_train(args)
    started = time.perf_counter()
    commands = {"losses": losses, "first-batch": first_batch, "orders": orders, "loader": loader, "resume": resume}
    code = commands[args.command](args)
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
