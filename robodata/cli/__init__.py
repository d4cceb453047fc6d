"""The ``robodata`` command: sample data, ingest, inspect, edit, demo and benchmarks."""

from __future__ import annotations

import argparse
import sys
import traceback

from tqdm import tqdm

# Each group module registers its commands with @command when imported; the group modules
# import nothing beyond the standard library and tqdm at module level, so a command needing an
# extra never stops another running without it.
from robodata.cli import _bench, _dagster, _datasets, _ingest_and_interop  # noqa: F401 - they register
from robodata.cli._registry import REGISTERED, Configure, Run
from robodata.cli._registry import HelpFormatter as HelpFormatter  # the commands' help (benchmarks/ uses it)
from robodata.errors import RoboDataError
from robodata.storage._deadlines import exit_now_if_abandoned

# The order `robodata --help` lists the commands in; a command no group lists here comes last.
LISTED = (
    "sample-data",
    "ingest",
    "info",
    "add-rendition",
    "delete",
    "tag",
    "gc",
    "demo",
    "dagster-home",
    "export-lerobot",
    "import-lerobot",
    "import-hdf5",
    "register-uploads",
    "repartition",
    "register-imports",
    "verify",
    "view",
    "annotate",
    "compact",
    "bench",
)
# name -> (configure its options, run it): every command, in the order of LISTED.
COMMANDS: dict[str, tuple[Configure, Run]] = {
    **{name: REGISTERED[name] for name in LISTED if name in REGISTERED},
    **REGISTERED,
}


def main(argv: list[str] | None = None) -> int:
    """Run one ``robodata`` command. robodata's own errors (RoboDataError: a bad upload, a storage
    failure, a missing episode) are one line on stderr and exit code 2; anything else is a bug and
    keeps its traceback. ``--debug`` shows the traceback for robodata's errors too."""
    # Without argv this is the robodata command itself (the console script, python -m robodata.cli),
    # which may end the process; a caller that passes argv always gets the exit code back.
    as_the_command = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="robodata", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show the traceback of robodata's own errors too")
    sub = parser.add_subparsers(dest="command", required=True)
    # Only the command being run configures its options: a command whose options need an extra
    # (Dagster, a benchmark) never stops the others from running without it.
    chosen = next((arg for arg in argv if not arg.startswith("-")), None)
    for name, (configure, run) in COMMANDS.items():
        p = sub.add_parser(name, help=(run.__doc__ or "").strip() or None)
        if name == chosen:
            configure(p)
            p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        p.set_defaults(run=run)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except RoboDataError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"robodata {args.command}: {one_line_error(exc)}", file=sys.stderr)
        if as_the_command:  # see exit_now_if_abandoned: a storage call may still be inside Lance
            exit_now_if_abandoned(2)
        return 2


def one_line_error(exc: BaseException) -> str:
    """``exc``'s message on one line, credentials redacted (a store's multi-line XML answer
    included). Open progress bars are closed first, so the message starts its own line.

    >>> one_line_error(FileNotFoundError("uploads/ep/states.parquet: is missing"))
    'uploads/ep/states.parquet: is missing'
    """
    from robodata.storage import redact

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()
    text = exc.args[0] if isinstance(exc, KeyError) and len(exc.args) == 1 else exc
    return redact(" ".join(str(text).split()) or type(exc).__name__)
