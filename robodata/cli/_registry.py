"""How a command joins ``robodata``: the ``@command`` decorator every group module uses, the help
formatter of the commands' options, and the ``--version`` parsing several groups share."""

from __future__ import annotations

import argparse
from collections.abc import Callable

Configure = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]

# name -> (configure its options, run it), in the order the group modules register them;
# robodata.cli.COMMANDS puts them in the order `robodata --help` lists them.
REGISTERED: dict[str, tuple[Configure, Run]] = {}


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: X)" to an option's help, except for flags and options without a default
    (their help says what happens when they are left out)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.nargs == 0 or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def command(name: str, configure: Configure):
    """Register ``run`` as subcommand ``name``; its docstring is the command's help and description."""

    def register(run: Run):
        def configure_with_help(p: argparse.ArgumentParser) -> None:
            p.formatter_class = HelpFormatter
            p.description = p.description or (run.__doc__ or "").strip() or None
            configure(p)

        REGISTERED[name] = (configure_with_help, run)
        return run

    return register


def version_or_tag(value: str | None) -> int | str | None:
    """A ``--version`` argument as the reader takes it: digits are a version number, else a tag.

    >>> version_or_tag("12"), version_or_tag("before-delete"), version_or_tag(None)
    (12, 'before-delete', None)
    """
    if value is None:
        return None
    return int(value) if value.isdigit() else value
