"""`robodata --help` and every subcommand's --help describe each command and option, with defaults."""

from __future__ import annotations

import argparse

import pytest

from robodata.cli import COMMANDS, main
from robodata.codec._settings import EncoderSettings


def subcommand_parsers() -> dict[str, argparse.ArgumentParser]:
    parsers = {}
    for name, (configure, _) in COMMANDS.items():
        parser = argparse.ArgumentParser(prog=f"robodata {name}")
        configure(parser)
        parsers[name] = parser
    return parsers


def test_every_command_and_option_has_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    listing = capsys.readouterr().out
    for name, parser in subcommand_parsers().items():
        assert parser.description, f"robodata {name} has no description"
        assert f"    {name} " in listing, f"robodata --help does not describe {name}"
        undocumented = [a.dest for a in parser._actions if not a.help]
        assert not undocumented, f"robodata {name}: options without help {undocumented}"


def test_option_help_shows_defaults_and_skips_flags(capsys):
    with pytest.raises(SystemExit):
        main(["ingest", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    new_gop = EncoderSettings().gop_size
    assert (
        "--gop-size GOP_SIZE frames per closed GOP, the most a random read decodes "
        f"(default: the dataset's; new: {new_gop})" in text
    )
    assert "(default: the dataset's; new: faster)" in text
    assert "(default: None)" not in text
    with pytest.raises(SystemExit):
        main(["view", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--version VERSION a version number or a tag (default: latest)" in text
    assert "--serve serve the page on 127.0.0.1 until Ctrl-C --port" in text  # a flag: no "(default: False)"
    assert "default: None" not in text


def test_help_lists_every_command_once_in_the_listed_order(capsys):
    """The group modules register the commands; robodata.cli.LISTED orders `robodata --help`. A
    command added to a group is listed there, one removed leaves the listing too."""
    from robodata.cli import LISTED
    from robodata.cli._registry import REGISTERED

    assert sorted(LISTED) == sorted(REGISTERED)
    assert list(COMMANDS) == list(LISTED)
    with pytest.raises(SystemExit):
        main(["--help"])
    lines = capsys.readouterr().out.splitlines()
    listed = [line.split()[0] for line in lines if line.startswith("    ") and not line.startswith("     ")]
    assert listed == list(LISTED)
    assert listed[:3] == ["sample-data", "ingest", "info"] and listed[-1] == "bench"
