"""Every `--help` of `dualstack` ends with an Examples section (the parser's epilog), and every
example in it is a command line the parsers accept: an example cannot name a flag that is gone."""

from __future__ import annotations

import argparse
import shlex

import pytest

from dualstack.cli import EXAMPLES, OneLineParser, build_parser, examples
from dualstack.docs_gen import parsers

REDIRECTS = {"|", "<", ">"}


def example_commands(help_text: str) -> list[str]:
    """The commands of the help's last paragraph, `Examples:`, continuation lines joined and
    `# comments` dropped; AssertionError when the help does not end with one."""
    last = help_text.rstrip().split("\n\n")[-1]
    assert last.startswith(f"{EXAMPLES}\n"), f"the help ends with {last[:60]!r}"
    joined = last.split("\n", 1)[1].replace(" \\\n", " ")
    return [line.split("  #", 1)[0].strip() for line in joined.splitlines()]


def argv_of(command: str) -> list[str]:
    """The arguments `dualstack` gets from an example's command line (up to a pipe or a
    redirection)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars="|<>")
    lexer.whitespace_split = True
    tokens = list(lexer)
    if REDIRECTS & set(tokens):
        tokens = tokens[: min(tokens.index(t) for t in REDIRECTS & set(tokens))]
    assert tokens[0] == "dualstack", command
    return tokens[1:]


def every_parser() -> list[argparse.ArgumentParser]:
    return list(parsers(build_parser(every=True)))


@pytest.mark.parametrize("parser", every_parser(), ids=lambda parser: parser.prog)
def test_every_help_ends_with_examples_the_parser_accepts(parser) -> None:
    commands = example_commands(parser.format_help())
    assert commands, parser.prog
    words = parser.prog.split()[1:]  # `dualstack ci junit` -> ["ci", "junit"]
    for command in commands:
        argv = argv_of(command)
        if argv[:1] == ["-C"]:
            argv = argv[2:] if words else argv
        assert argv[: len(words)] == words, f"{command!r} is not an example of {parser.prog}"
        build_parser(every=True).parse_args(argv_of(command))  # SystemExit on a bad flag


def test_the_top_level_help_lists_examples_without_importing_a_command() -> None:
    listing = build_parser().format_help()
    assert listing == build_parser(every=True).format_help()
    assert "\nExamples:\n  dualstack status" in listing


def test_an_example_keeps_its_lines_and_the_rest_is_filled() -> None:
    parser = OneLineParser(
        prog="dualstack",
        epilog=examples("dualstack status \\\nwrapped on purpose", before="Exit codes: " * 20),
    )
    text = parser.format_help()
    assert "  dualstack status \\\n      wrapped on purpose\n" in text
    assert all(len(line) <= 100 for line in text.splitlines())  # the paragraph was filled


def test_an_example_with_a_flag_that_is_gone_fails(capsys) -> None:
    parser = OneLineParser(prog="dualstack", epilog=examples("dualstack status --colour"))
    (command,) = example_commands(parser.format_help())
    with pytest.raises(SystemExit):
        build_parser(every=True).parse_args(argv_of(command))
    assert "unrecognized arguments: --colour" in capsys.readouterr().err
