"""The subcommand registry: commands added with `register` (including grouped ones such as
`trace example`) parse, run, and report bad input as one line with status 2."""

from __future__ import annotations

import argparse

import pytest

from vmemsim import VmemsimError, cli


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr(cli, "_COMMANDS", dict(cli._COMMANDS))
    monkeypatch.setattr(cli, "_GROUPS", dict(cli._GROUPS))
    seen = {}

    def configure(p: argparse.ArgumentParser) -> None:
        cli.add_trace_arguments(p)
        p.add_argument("--fail", action="store_true")

    def run(args: argparse.Namespace) -> int:
        if args.fail:
            raise VmemsimError(f"{args.trace}: byte 12: truncated\nsecond line")
        seen["trace"] = args.trace
        seen["format"] = args.format
        return 0

    cli.register_group("trace", "work on trace files")
    cli.register("trace example", "describe a trace", configure, run)
    return seen


def test_grouped_command_runs(registered, capsys) -> None:
    assert cli.main(["trace", "example", "--trace", "t.vmt", "--format", "text"]) == 0
    assert registered == {"trace": "t.vmt", "format": "text"}


def test_grouped_command_error_is_one_line(registered, capsys) -> None:
    assert cli.main(["trace", "example", "--trace", "t.vmt", "--fail"]) == 2
    err = capsys.readouterr().err
    assert err == "vmemsim: error: t.vmt: byte 12: truncated second line\n"


def test_group_without_command_prints_help(registered, capsys) -> None:
    assert cli.main(["trace"]) == 2
    assert "example" in capsys.readouterr().err


def test_duplicate_registration_is_refused(registered) -> None:
    with pytest.raises(ValueError, match="twice"):
        cli.register("trace example", "again", lambda p: None, lambda a: 0)


def test_policy_arguments_round_trip(registered) -> None:
    p = argparse.ArgumentParser()
    cli.add_trace_arguments(p)
    cli.add_policy_arguments(p)
    args = p.parse_args(
        ["--trace", "x", "--policy", "lru", "--frames", "25%", "--opt", "a=1",
         "--watermarks", "1,2,3", "--page-cluster", "2"]
    )
    kw = cli.replay_kwargs(args)
    assert kw == dict(
        policy="lru", frames="25%", seed=0, options={"a": "1"}, page_cluster=2,
        watermarks=[1, 2, 3], swappiness=60, check_invariants=False, format=None,
        page_size=4096, addresses=False, csv=None,
    )
