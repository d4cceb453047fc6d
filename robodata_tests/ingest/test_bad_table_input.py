"""A bad states.parquet is refused, naming the file and the problem, and nothing stored changes:
a file that is not Parquet, NaN or infinite values, rows of the wrong shape or null, timestamps
that repeat, go back, do not fit int64 or are not integers, far too many rows for the control
rate, columns of the wrong type and columns it does not know (the check each case gets: bad_input.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from robodata_tests.ingest.bad_input import edit_states, refusal_test, refused, write_text


def set_value(column: str, row: int, joint: int, value: float):
    return edit_states(lambda c: c[column][row].__setitem__(joint, value))


def drop_last_joint(columns: dict) -> None:
    columns["observation_state"] = [row[:-1] for row in columns["observation_state"]]


def scalar_state(columns: dict) -> None:
    columns["observation_state"] = [row[0] for row in columns["observation_state"]]


def null_action_row(columns: dict) -> None:
    columns["action"][3] = None


def short_action_row(columns: dict) -> None:
    columns["action"][4] = columns["action"][4][:-1]


def crowded_timestamps(columns: dict) -> None:
    """100,000 rows 1 us apart (100 ms of samples at 1 MHz): far more rows than control_hz allows."""
    n = 100_000
    first = columns["observation_state"][0]
    columns["timestamp_ns"] = [i * 1000 for i in range(n)]
    columns["observation_state"] = columns["action"] = [first] * n
    for name in list(columns):
        if name not in ("timestamp_ns", "observation_state", "action"):
            del columns[name]


def repeat_timestamp(columns: dict) -> None:
    columns["timestamp_ns"][10] = columns["timestamp_ns"][9]


def swap_timestamps(columns: dict) -> None:
    ts = columns["timestamp_ns"]
    ts[10], ts[11] = ts[11], ts[10]


def replace_column(name: str, make: Callable[[dict], object]):
    return edit_states(lambda c: c.__setitem__(name, make(c)))


def no_rows(columns: dict) -> None:
    for name in columns:
        columns[name] = columns[name][:0]


def write_states_table(change: Callable[[pa.Table], pa.Table]):
    """Rewrite states.parquet with a column of a type ``edit_states`` cannot express."""

    def damage(upload: Path) -> None:
        path = upload / "states.parquet"
        pq.write_table(change(pq.read_table(path)), path)

    return damage


def uint64_timestamps(table: pa.Table) -> pa.Table:
    """Timestamps as uint64 counting from 2^63: valid uint64, beyond int64."""
    values = pa.array([2**63 + t for t in table["timestamp_ns"].to_pylist()], pa.uint64())
    return table.set_column(table.schema.get_field_index("timestamp_ns"), "timestamp_ns", values)


def float_timestamps(table: pa.Table) -> pa.Table:
    values = table["timestamp_ns"].cast(pa.float64())
    return table.set_column(table.schema.get_field_index("timestamp_ns"), "timestamp_ns", values)


# fmt: off
CASES = [
    # values and timestamps
    refused("nan-state", set_value("observation_state", 5, 3, float("nan")), "states.parquet", "observation_state has NaN or infinite values", "sample 5"),
    refused("infinite-action", set_value("action", 7, 0, float("inf")), "states.parquet", "action has NaN or infinite values", "sample 7"),
    refused("wrong-state-length", edit_states(drop_last_joint), "states.parquet", "observation_state has shape", "13)", "14 joint names"),
    refused("repeated-timestamp", edit_states(repeat_timestamp), "states.parquet", "timestamps must strictly increase", "sample 10"),
    refused("decreasing-timestamp", edit_states(swap_timestamps), "states.parquet", "timestamps must strictly increase", "sample 11"),
    refused("states-not-parquet", write_text("states.parquet", "t,x\n0,1\n"), "states.parquet", "not a readable Parquet file"),
    # values of the wrong kind
    refused("is-intervention-strings", replace_column("is_intervention", lambda c: ["false"] * len(c["timestamp_ns"])), "states.parquet", "is_intervention must be boolean, got string"),
    refused("source-none", edit_states(lambda c: c["source"].__setitem__(3, None)), "states.parquet", "source has a null value at sample 3"),
    refused("zero-row-states", edit_states(no_rows), "states.parquet", "no state samples (0 rows)"),
    refused("uint64-timestamps", write_states_table(uint64_timestamps), "states.parquet", "timestamp_ns (uint64) has values beyond the int64 range"),
    refused("float-timestamps", write_states_table(float_timestamps), "states.parquet", "timestamp_ns must be integer nanoseconds, got double"),
    refused("scalar-state-column", edit_states(scalar_state), "states.parquet", "observation_state must hold a list of numbers per sample", "got double"),
    refused("null-action-row", edit_states(null_action_row), "states.parquet", "action has a null row at sample 3"),
    refused("action-rows-differ-in-length", edit_states(short_action_row), "states.parquet", "action rows differ in length: 14 values at sample 0, 13 at sample 4"),
    refused("unknown-states-column", replace_column("gripper_force", lambda c: [0.5] * len(c["timestamp_ns"])), "episode_000001/states.parquet: has unknown columns ['gripper_force']; known: ['action', " "'is_intervention', 'observation_state', 'source', 'timestamp_ns']"),
    refused("100k-rows-in-100-ms", edit_states(crowded_timestamps), "states.parquet", "has 100,000 rows over 0.1 s of timestamps", "control_hz 100"),
]
# fmt: on


test_bad_input = refusal_test(CASES)
