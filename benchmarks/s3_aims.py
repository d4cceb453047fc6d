"""Issue #43's aims (training from object storage), checked against one ``robodata bench s3-epoch
--peers VENV`` run's figures; a missed aim carries its profile: what bound the s3:// epoch (the
server's CPU, the GETs' first-byte latency, or decoding: the local epoch of the same rows).

``figures`` is a flat dict of the run's medians (``S3Figures.as_dict`` in ``benchmarks.s3_peers``):

- ``{robodata,train,lancedb}_{s3,local}``: samples/s after the first batch (``train``: the
  ``robodata-train`` path, ``LeRobotCompatDataset`` in the DataLoader it builds);
  ``{robodata224,lancedb224}_local``: the same at 224x224 (robodata's training rendition,
  LanceDBDataset's documented ``v2.Resize``);
- ``gets``, ``bytes``, ``mean_bytes_per_get``: robodata's s3:// epoch (make_dataloader);
  ``needed_gop_bytes``: the GOP bytes one epoch must fetch;
- ``first_batch_s3_s``, ``first_batch_local_s``: robodata's first batch (opening the dataset
  included); ``lerobot_first_batch_local_s``: LeRobotDataset's map-style first batch, local disk;
- for profiles: ``gops`` (full-resolution GOPs), and per system (``robodata``, ``train``) the timed
  epochs' ``{system}_s3_epoch_s``, ``{system}_local_epoch_s``, ``{system}_server_cpu_s``,
  ``{system}_timed_gets``; ``latency_s``, ``workers``.
"""

from __future__ import annotations

from benchmarks.aims import _aim

MIB = 1 << 20
# A video GET this large or larger is a span's range; robodata's smaller ones are each worker's scan
# of the GOP index's columns (a 64 KiB footer, then ~50 KiB a column) and each read's blob descriptors.
LARGE_GET_BYTES = 256 << 10
S3_VS_LOCAL = 0.9  # D from s3:// / D from the local disk, same run
S3_VS_LANCEDB = 3.0  # robodata from s3:// / LanceDBDataset from the same store
MEAN_GET_BYTES = MIB
BYTES_VS_NEEDED = 1.1  # bytes an epoch reads / the GOP bytes it needs
LOCAL_VS_LANCEDB = 3.5  # local D must not fall: robodata / LanceDBDataset native, local disk
LOCAL_VS_LANCEDB_224 = 5.0  # ... and at 224x224: robodata's training rendition / LanceDBDataset + v2.Resize


def evaluate_s3_aims(figures: dict, randomness: dict | None = None) -> list[dict]:
    """Every aim of #43 this run measures, with its target, the measured figure and whether it was met."""
    f = figures
    aims = [
        _aim(
            "s3_local_loader",
            "make_dataloader D: s3:// / local disk",
            S3_VS_LOCAL,
            f["robodata_s3"] / f["robodata_local"],
        ),
        _aim(
            "s3_local_train", "robodata-train path D: s3:// / local disk", S3_VS_LOCAL, f["train_s3"] / f["train_local"]
        ),
        _aim(
            "s3_vs_lancedb",
            "D from the same store: robodata make_dataloader / LanceDBDataset",
            S3_VS_LANCEDB,
            f["robodata_s3"] / f["lancedb_s3"],
        ),
        _aim(
            "mean_get",
            "mean bytes per GET (MiB), robodata's s3:// epoch",
            MEAN_GET_BYTES / MIB,
            f["mean_bytes_per_get"] / MIB,
        ),
        _aim(
            "epoch_bytes",
            "bytes an s3:// epoch reads / the GOP bytes it needs",
            BYTES_VS_NEEDED,
            f["bytes"] / f["needed_gop_bytes"],
            False,
        ),
        _aim(
            "first_batch",
            "first batch (s): robodata from s3:// at most LeRobotDataset's map-style from the local disk",
            f["lerobot_first_batch_local_s"],
            f["first_batch_s3_s"],
            False,
        ),
        _aim(
            "local_vs_lancedb",
            "local D does not fall: robodata make_dataloader / LanceDBDataset, local disk",
            LOCAL_VS_LANCEDB,
            f["robodata_local"] / f["lancedb_local"],
        ),
        _aim(
            "local_vs_lancedb_224",
            "local D at 224x224 does not fall: robodata make_dataloader (training rendition) / LanceDBDataset "
            "(v2.Resize), local disk",
            LOCAL_VS_LANCEDB_224,
            f["robodata224_local"] / f["lancedb224_local"],
        ),
    ]
    if randomness is not None:
        aims.append(randomness)
    explain = {
        "s3_local_loader": lambda: s3_profile(f, "robodata"),
        "s3_local_train": lambda: s3_profile(f, "train"),
        "s3_vs_lancedb": lambda: s3_profile(f, "robodata"),
        "mean_get": lambda: gets_profile(f),
        "epoch_bytes": lambda: gets_profile(f),
        "first_batch": lambda: (
            f"robodata's first batch: {f['first_batch_s3_s']:.1f} s from s3://, {f['first_batch_local_s']:.1f} s "
            "from the local disk (opening the dataset and starting the workers included in both)"
        ),
        "local_vs_lancedb": lambda: (
            f"local disk, no store: robodata {f['robodata_local']:.1f} samples/s, LanceDBDataset "
            f"{f['lancedb_local']:.1f}; the peers report (robodata bench OUT --peers VENV) profiles local reads"
        ),
        "local_vs_lancedb_224": lambda: (
            f"local disk, 224x224: robodata {f['robodata224_local']:.1f} samples/s, LanceDBDataset "
            f"{f['lancedb224_local']:.1f}; the peers report (robodata bench OUT --peers VENV) profiles local reads"
        ),
    }
    for aim in aims:
        if not aim["met"] and aim["key"] in explain:
            aim["why"] = explain[aim["key"]]()
    return aims


def s3_profile(figures: dict, system: str) -> str:
    """What bound ``system``'s timed s3:// epoch (``robodata``: make_dataloader; ``train``: the
    robodata-train path), from the run's figures: the store's server CPU, the GETs' first-byte
    latency (each worker waits for its own requests), or decoding (the same epoch from the local
    disk, where no store costs anything). The largest share names the bound."""
    f = figures
    wall, local = f[f"{system}_s3_epoch_s"], f[f"{system}_local_epoch_s"]
    cpu, gets = f[f"{system}_server_cpu_s"], f[f"{system}_timed_gets"]
    latency_s = gets * f["latency_s"] / max(f["workers"], 1)
    shares = {
        "server CPU": cpu / wall,
        "GETs (first-byte latency, one request per worker at a time)": latency_s / wall,
        "decode and the rest (the local epoch)": local / wall,
    }
    bound = max(shares, key=lambda k: shares[k])
    return (
        f"{system}: s3:// epoch {wall:.2f} s against {local:.2f} s local; server CPU {cpu:.2f} s "
        f"({shares['server CPU']:.0%} of the wall); {gets:g} GETs x {f['latency_s'] * 1000:g} ms / "
        f"{f['workers']} workers = {latency_s:.2f} s of first-byte waits ({latency_s / wall:.0%}); "
        f"the local epoch is {local / wall:.0%} of it. Bound: {bound}"
    )


def gets_profile(figures: dict) -> str:
    """How robodata's cold s3:// epoch read its GOPs: GETs per GOP, bytes each, bytes against need."""
    f = figures
    return (
        f"{f['gets']:g} GETs on gops.lance data for {f['gops']} GOPs ({f['gets'] / max(f['gops'], 1):.2f} per GOP), "
        f"{f['mean_bytes_per_get'] / 1024:.1f} KiB each, {f['bytes'] / MIB:.2f} MiB for {f['needed_gop_bytes'] / MIB:.2f} "
        f"MiB of GOPs; {f['large_gets']:g} of them span ranges of {f['large_get_mean_bytes'] / 1024:.1f} KiB each, "
        f"{f['gets'] - f['large_gets']:g} under {LARGE_GET_BYTES // 1024} KiB (each worker's scan of the GOP index, "
        "each read's blob descriptors)"
    )


def format_aims(aims: list[dict]) -> str:
    """One line per aim, met or not, with the figures; a missed aim's profile below it."""
    lines = []
    for aim in aims:
        mark = "MET   " if aim["met"] else "MISSED"
        lines.append(f"{mark} {aim['aim']}: {aim['measured']:.3g} {aim['comparison']} {aim['target']:.3g}")
        if "why" in aim:
            lines.append(f"       profile: {aim['why']}")
    return "\n".join(lines)
