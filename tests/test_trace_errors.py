"""Bad traces and generator specs through every command that reads a trace: exit status 2,
exactly one stderr line `vmemsim: error: ...` naming the file and offset/line (or the key),
no traceback, nothing on stdout, and no partial output file left by a failed convert."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest

import vmemsim
from conftest import run_cli
from test_cli import assert_one_line_error


def _native(tmp: Path) -> Path:
    p = tmp / "good.vmt"
    assert vmemsim.convert(vmemsim.generate("zipf:pages=5000,n=200000"), p) == 200000
    return p


def truncated_native(tmp: Path) -> Tuple[Path, List[str], List[str]]:
    data = _native(tmp).read_bytes()
    p = tmp / "truncated.vmt"
    p.write_bytes(data[: len(data) // 2])
    return p, [], ["truncated", "byte "]


def corrupt_native(tmp: Path) -> Tuple[Path, List[str], List[str]]:
    data = bytearray(_native(tmp).read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside a chunk's payload: its CRC no longer matches
    p = tmp / "corrupt.vmt"
    p.write_bytes(bytes(data))
    return p, [], ["byte ", "chunk"]


def wrong_magic(tmp: Path) -> Tuple[Path, List[str], List[str]]:
    p = tmp / "wrong.vmt"
    p.write_text("1\n2\n3\n")
    return p, [], ["byte 0", "magic"]


def non_numeric_text(tmp: Path) -> Tuple[Path, List[str], List[str]]:
    p = tmp / "bad.txt"
    p.write_text("1\n2 W\n# comment\n0x1f\nnope\n5\n")
    return p, [], ["line 5", "nope"]


def csv_missing_column(tmp: Path) -> Tuple[Path, List[str], List[str]]:
    p = tmp / "t.csv"
    p.write_text("time,page,op\n1,10,r\n2,11,w\n")
    return p, ["--csv", "column=addr,op=op"], ["line 1", "'addr'"]


def oracle_partial_record(tmp: Path) -> Tuple[Path, List[str], List[str]]:
    p = tmp / "partial.oracleGeneral"
    p.write_bytes(bytes(24 * 3 + 10))  # three whole 24-byte records and part of a fourth
    return p, [], ["byte 72", "truncated"]


CASES: Dict[str, Callable[[Path], Tuple[Path, List[str], List[str]]]] = {
    "truncated-native": truncated_native,
    "corrupt-native": corrupt_native,
    "wrong-magic": wrong_magic,
    "non-numeric-text": non_numeric_text,
    "csv-missing-column": csv_missing_column,
    "oracle-partial-record": oracle_partial_record,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_trace_files(tmp_path: Path, case: str) -> None:
    path, extra, needles = CASES[case](tmp_path)
    t = str(path)
    out = tmp_path / "out.vmt"
    commands = [
        ["trace", "info", t, *extra],
        ["trace", "read", t, *extra],
        ["trace", "convert", t, str(out), *extra],
        ["mrc", "--trace", t, "--sizes", "10", *extra],
        ["replay", "--trace", t, "--policy", "fifo", "--frames", "10", *extra],
    ]
    for cmd in commands:
        line = assert_one_line_error(run_cli(*cmd), t, *needles)
        assert line.startswith(f"vmemsim: error: {t}: "), (cmd, line)
    assert not out.exists(), "a failed convert leaves no partial file"


@pytest.mark.parametrize(
    "spec,needle",
    [
        ("zipf:pages=100,n=10,bogus=1", "zipf.bogus"),
        ("zipf:pages=100", "zipf.n"),
        ("zipf:pages=100,n=10,alpha=x", "zipf.alpha"),
        ("nosuch:pages=1,n=1", "nosuch"),
        ("mix:(zipf:pages=10)*0.5+(scan:pages=5", "generator"),
    ],
)
def test_bad_generator_specs(tmp_path: Path, spec: str, needle: str) -> None:
    for cmd in (
        ["generate", spec, "--out", str(tmp_path / "g.vmt")],
        ["trace", "info", f"gen:{spec}"],
        ["replay", "--trace", f"gen:{spec}", "--policy", "lru", "--frames", "3"],
    ):
        assert_one_line_error(run_cli(*cmd), needle)
    assert not (tmp_path / "g.vmt").exists()


@pytest.mark.parametrize(
    "args,needle",
    [
        (["trace", "info", "{missing}"], "{missing}"),
        (["trace", "info", "{txt}", "--format", "parquet"], "format"),
        (["trace", "info", "{txt}", "--csv", "op=2"], "csv"),
        (["trace", "info", "{csv}", "--csv", "colour=2"], "csv.colour"),
        (["trace", "info", "{txt}", "--page-size", "1000"], "--page-size"),
        (["trace", "convert", "{txt}", "{txt}"], "output is the input"),
        (["trace", "convert", "{txt}", "{dir}/no/such/dir.vmt"], "no/such/dir.vmt"),
        (["trace", "convert", "{txt}", "{dir}/o.vmt", "--to", "parquet"], "format"),
        (["mrc", "--trace", "{txt}", "--sizes", "0,4"], "--sizes"),
        (["mrc", "--trace", "{txt}", "--sizes", "4", "--points", "3"], "not allowed"),
        (["mrc", "--trace", "{txt}", "--shards", "2"], "--shards"),
        (["mrc", "--trace", "{txt}", "--shards", "0.5", "--policy", "fifo"], "shards"),
        (["mrc", "--trace", "{txt}", "--policy", "nosuch"], "nosuch"),
        (["mrc", "--trace", "{txt}", "--workers", "0"], "--workers"),
        (["replay", "--trace", "{vmt}", "--addresses", "--policy", "lru", "--frames", "2"],
         "addresses"),
    ],
)
def test_other_bad_input(tmp_path: Path, args: List[str], needle: str) -> None:
    txt = tmp_path / "ok.txt"
    txt.write_text("1\n2\n3\n")
    csvf = tmp_path / "ok.csv"
    csvf.write_text("page\n1\n")
    vmt = tmp_path / "ok.vmt"
    vmemsim.write_trace([1, 2, 3], vmt)
    subst = {"{txt}": str(txt), "{csv}": str(csvf), "{vmt}": str(vmt), "{dir}": str(tmp_path),
             "{missing}": str(tmp_path / "missing.txt")}
    argv = list(args)
    for k, v in subst.items():
        argv = [a.replace(k, v) for a in argv]
        needle = needle.replace(k, v)
    assert_one_line_error(run_cli(*argv), needle)
