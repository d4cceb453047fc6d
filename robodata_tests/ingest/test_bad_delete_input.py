"""Episode numbers given to delete are validated integers that the dataset holds: a value that
would reach a Lance filter string raw is refused, and nothing stored changes (the check each
case gets: bad_input.py)."""

from __future__ import annotations

import robodata
from robodata.errors import EpisodeNotFoundError
from robodata_tests.ingest.bad_input import Case, Context, refusal_test


def delete_with(value):
    def run(ctx: Context):
        if ctx.cli is not None:
            return ctx.cli(["delete", ctx.dataset, str(value)])
        return robodata.delete_episodes(ctx.dataset, [value])

    return run


# fmt: off
CASES = [
    # values that would reach a Lance filter string
    # argparse itself refuses a non-integer episode ("argument episodes: invalid int value")
    # before robodata runs: through the API only
    Case("filter-injection-in-delete", delete_with("1) OR (1=1"), ValueError, ("episode_index must be a non-negative integer", "'1) OR (1=1'"), via_cli=False),
    Case("negative-episode-in-delete", delete_with(-3), ValueError, ("episode_index must be a non-negative integer", "-3")),
    Case("delete-episode-not-held", delete_with(42), EpisodeNotFoundError, ("no episode 42 in the dataset", "nothing deleted")),
]
# fmt: on


test_bad_input = refusal_test(CASES)
