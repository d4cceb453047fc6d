"""Issue #43's aims (training from object storage), checked against one ``robodata bench s3-epoch
--peers VENV`` run's figures; a missed aim carries its profile: what bound the s3:// epoch (the
server's CPU, the GETs' first-byte latency, or decoding: the local epoch of the same rows).

``figures`` is a flat dict of the run's medians (``S3Figures.as_dict`` in ``benchmarks.s3_peers``):

- ``{robodata,train,lancedb}_{s3,local}``: samples/s after the first batch (``train``: the
  ``robodata-train`` path, ``LeRobotCompatDataset`` in the DataLoader it builds);
- ``gets``, ``bytes``, ``mean_bytes_per_get``: robodata's s3:// epoch (make_dataloader);
  ``needed_gop_bytes``: the GOP bytes one epoch must fetch;
- ``first_batch_s3_s``: robodata's first batch from s3:// (opening the dataset included);
  ``lerobot_first_batch_local_s``: LeRobotDataset's map-style first batch from the local disk;
- for profiles: ``s3_epoch_s``, ``local_epoch_s`` (robodata's epoch walls), ``server_cpu_s``,
  ``latency_s``, ``workers``.
"""

from __future__ import annotations

from benchmarks.aims import _aim

MIB = 1 << 20
S3_VS_LOCAL = 0.9  # D from s3:// / D from the local disk, same run
S3_VS_LANCEDB = 3.0  # robodata from s3:// / LanceDBDataset from the same store
MEAN_GET_BYTES = MIB
BYTES_VS_NEEDED = 1.1  # bytes an epoch reads / the GOP bytes it needs
LOCAL_VS_LANCEDB = 3.5  # local D must not fall: robodata / LanceDBDataset native, local disk


def order_randomness_aim() -> dict | None:
    """SLOT for the lead: the s3order branch's randomness aim (distinct episodes per batch at 200+
    episodes, >= 0.8x the uniform order's). Fill at merge with
    ``from benchmarks.order_randomness import randomness_aim; return randomness_aim(episodes=200)``.
    Until then None, and the report says the aim is not evaluated on this branch."""
    return None


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
    ]
    if randomness is not None:
        aims.append(randomness)
    for aim in aims:
        if not aim["met"] and aim["key"] != (randomness or {}).get("key"):
            aim["why"] = s3_profile(f)
    return aims


def s3_profile(figures: dict) -> str:
    """What bound robodata's s3:// epoch, from the run's figures: the store's server CPU, the GETs'
    first-byte latency (each worker waits for its own requests), or decoding (the same epoch from
    the local disk, where no store costs anything). The largest share names the bound."""
    f = figures
    wall = f["s3_epoch_s"]
    latency_s = f["gets"] * f["latency_s"] / max(f["workers"], 1)
    shares = {
        "server CPU": f["server_cpu_s"] / wall,
        "GETs (first-byte latency, one request per worker at a time)": latency_s / wall,
        "decode and the rest (the local epoch)": f["local_epoch_s"] / wall,
    }
    bound = max(shares, key=lambda k: shares[k])
    return (
        f"s3:// epoch {wall:.2f} s against {f['local_epoch_s']:.2f} s local; server CPU {f['server_cpu_s']:.2f} s "
        f"({shares['server CPU']:.0%} of the wall); {f['gets']} GETs x {f['latency_s'] * 1000:g} ms / "
        f"{f['workers']} workers = {latency_s:.2f} s of first-byte waits ({latency_s / wall:.0%}); "
        f"the local epoch is {shares['decode and the rest (the local epoch)']:.0%} of it. Bound: {bound}"
    )


def format_aims(aims: list[dict], randomness_evaluated: bool) -> str:
    """One line per aim, met or not, with the figures; a missed aim's profile below it."""
    lines = []
    for aim in aims:
        mark = "MET   " if aim["met"] else "MISSED"
        lines.append(f"{mark} {aim['aim']}: {aim['measured']:.3g} {aim['comparison']} {aim['target']:.3g}")
        if "why" in aim:
            lines.append(f"       profile: {aim['why']}")
    if not randomness_evaluated:
        lines.append(
            "NOT EVALUATED distinct episodes per batch at 200 episodes >= 0.8x uniform: "
            "benchmarks.s3_aims.order_randomness_aim is an unfilled slot on this branch"
        )
    return "\n".join(lines)
