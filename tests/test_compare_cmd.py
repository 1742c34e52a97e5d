"""``vmemsim compare``: sizes in every form, errors naming the item, misses of LRU and FIFO at
several sizes worked out by hand, the warm-up, JSON, and the files of ``--out``."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Dict, Tuple

import pytest

import vmemsim
from conftest import BELADY, run_cli, run_json, write_trace
from vmemsim import compare_cmd as cc
from vmemsim.cli import CliError

# ---------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    "item,distinct,frames",
    [
        ("4096", 10, 4096),          # a frame count, whatever the trace
        ("1", 1000, 1),
        ("10%", 1000, 100),          # 10% of 1000 distinct pages
        ("25%", 10, 3),              # 2.5 rounds half up
        ("150%", 10, 15),
        ("0.1", 1000, 100),          # a fraction is of the distinct pages too
        ("0.25", 10, 3),
        ("1.0", 7, 7),
        ("64MiB", 5, 16384),         # 64 * 2^20 / 4096
        ("1GiB", 5, 262144),         # 2^30 / 4096
        ("512KiB", 5, 128),          # 512 * 1024 / 4096
        ("4096B", 5, 1),
        ("6000B", 5, 1),             # bytes round down to whole frames
        ("1.5MiB", 5, 384),          # 1.5 * 2^20 / 4096
        ("2mb", 5, 512),             # units are binary and any case, as libCacheSim's
        (" 8K ", 5, 2),
    ],
)
def test_size_forms(item: str, distinct: int, frames: int) -> None:
    assert cc.parse_size(item).frames(distinct) == frames


@pytest.mark.parametrize(
    "item,why",
    [
        ("0%", "is below one frame"),
        ("0", "is below one frame"),
        ("0.0", "is below one frame"),
        ("-3", "is below one frame"),
        ("4095B", "is below one frame (4096 bytes, 4 KiB)"),
        ("1.5", "is not a fraction of the working set"),
        ("abc", "is not a size"),
        ("12XB", "has an unknown unit 'XB'"),
        ("2TiB", "is 536,870,912 frames, more than the largest machine"),
        ("300000000", "is more frames than the largest machine"),
    ],
)
def test_bad_size_names_the_item(item: str, why: str) -> None:
    with pytest.raises(CliError) as e:
        cc.parse_size(item)
    assert str(e.value).startswith(f"--sizes: '{item}' {why}"), str(e.value)


def test_share_below_one_frame_of_this_trace() -> None:
    # 1% of 5 distinct pages is 0.05 frames: an error that says why.
    with pytest.raises(CliError, match=r"^--sizes: '1%' is below one frame \(the trace has 5 "):
        cc.parse_size("1%").frames(5)


def test_sizes_list_resolves_sorted_and_merged() -> None:
    specs = cc.parse_sizes("50%,3,16KiB,0.6")
    # 50% of 5 = 2.5 -> 3 frames (the same size as '3', listed first by frames); 16 KiB = 4;
    # 0.6 of 5 = 3 frames again.
    assert cc.resolve_sizes(specs, 5) == [("50%", 3), ("16KiB", 4)]
    with pytest.raises(CliError, match="an empty item"):
        cc.parse_sizes("10%,,20%")


def test_bad_sizes_on_the_command_line(belady_trace: Path) -> None:
    for item in ("0%", "1.5", "abc"):
        p = run_cli("compare", "--trace", str(belady_trace), "--policies", "lru",
                    "--sizes", f"3,{item}")
        assert p.returncode == 2
        assert p.stdout == ""
        assert p.stderr.startswith(f"vmemsim: error: --sizes: '{item}' "), p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_unknown_policy_did_you_mean(belady_trace: Path) -> None:
    p = run_cli("compare", "--trace", str(belady_trace), "--policies", "lru,fifoo",
                "--sizes", "3")
    assert p.returncode == 2
    assert p.stderr == "vmemsim: error: --policies: unknown policy 'fifoo' (did you mean 'fifo'?)\n"
    with pytest.raises(vmemsim.VmemsimError, match=r"unknown policy 'mglr' \(did you mean"):
        cc.parse_policies("mglr")
    assert cc.parse_policies("lru, fifo,lru") == ["lru", "fifo"]


# ---------------------------------------------------------------- the table, by hand

_ROW = re.compile(
    r"^\s+(\S+)\s+([\d,]+)\s+[\d.]+ \S+\s+(\S+)\s+([\d,]+)\s+([\d.]+)\s+([\d,]+)$"
)


def table_rows(text: str) -> Dict[Tuple[str, int], Tuple[int, str, int]]:
    """``(policy, frames) -> (misses, miss ratio as printed, major faults)``."""
    out = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            size, frames, policy, misses, ratio, major = m.groups()
            out[(policy, int(frames.replace(",", "")))] = (
                int(misses.replace(",", "")), ratio, int(major.replace(",", ""))
            )
    return out


def test_lru_and_fifo_on_beladys_string(belady_trace: Path) -> None:
    # Belady's string 1 2 3 4 1 2 5 1 2 3 4 5, 5 distinct pages (5 cold misses).
    # LRU, 3 frames: every access misses but 8 and 9 (the 1 and 2 after 5): 10 misses.
    # LRU, 4 frames: misses at 1-4, 7 (5 evicts 3), 10 (3 evicts 4), 11 (4 evicts 5),
    #   12 (5 evicts 1): 8 misses.
    # FIFO, 3 frames: misses at 1-7, 10, 11: 9. FIFO, 4 frames: 1-4, 7-12: 10 (Belady's
    # anomaly). With 5 frames (100%) both miss only the 5 cold accesses.
    # Major faults are the misses that are not first touches (misses - 5).
    p = run_cli("compare", "--trace", str(belady_trace), "--policies", "lru,fifo",
                "--sizes", "3,16KiB,100%")
    assert p.returncode == 0, p.stderr
    rows = table_rows(p.stdout)
    assert rows == {
        ("lru", 3): (10, "0.8333", 5),
        ("fifo", 3): (9, "0.7500", 4),
        ("lru", 4): (8, "0.6667", 3),
        ("fifo", 4): (10, "0.8333", 5),
        ("lru", 5): (5, "0.4167", 0),
        ("fifo", 5): (5, "0.4167", 0),
    }
    assert "byte miss ratio = miss ratio" in p.stdout
    assert "  accesses       12\n" in p.stdout


def test_warmup_excludes_exactly_the_first_n(tmp_path: Path) -> None:
    # 1 2 3 1 2 3 1 2 3 on 3 frames: only the first three accesses miss (cold).
    t = write_trace(tmp_path / "cyc.txt", [1, 2, 3] * 3)
    for warmup, accesses, misses in (("0", 9, 3), ("1", 8, 2), ("2", 7, 1), ("3", 6, 0)):
        r = run_json("compare", "--trace", str(t), "--policies", "lru", "--sizes", "3",
                     "--warmup", warmup)
        (res,) = r["results"]
        assert (res["accesses"], res["faults"], res["warmup"]) == (accesses, misses, int(warmup))
        assert r["warmup"] == int(warmup)


def test_warmup_on_beladys_string(belady_trace: Path) -> None:
    # Warm-up of 4 accesses: counting starts at access 5 (1 2 5 1 2 3 4 5 are counted).
    # LRU, 3 frames: misses at 5, 6, 7, 10, 11, 12 = 6; all but 7 (page 5's first touch)
    # are major. FIFO, 3 frames: misses at 5, 6, 7, 10, 11 = 5, 4 major.
    p = run_cli("compare", "--trace", str(belady_trace), "--policies", "lru,fifo",
                "--sizes", "3", "--warmup", "4")
    assert p.returncode == 0, p.stderr
    assert table_rows(p.stdout) == {("lru", 3): (6, "0.7500", 5), ("fifo", 3): (5, "0.6250", 4)}
    assert "12 (4 warm-up, 8 counted)" in p.stdout
    # A fraction of the trace: 0.5 of 12 accesses = 6; LRU then misses at 7, 10, 11, 12,
    # FIFO at 7, 10, 11.
    r = run_json("compare", "--trace", str(belady_trace), "--policies", "lru,fifo",
                 "--sizes", "3", "--warmup", "0.5")
    assert r["warmup"] == 6
    assert [(x["policy"], x["accesses"], x["faults"]) for x in r["results"]] == [
        ("lru", 6, 4), ("fifo", 6, 3)
    ]


def test_warmup_errors(belady_trace: Path) -> None:
    for w, msg in (
        ("12", "--warmup: '12' is 12 accesses, which leaves nothing to count (the trace has 12"),
        ("1.5", "--warmup: '1.5' is not a fraction of the trace below 1"),
        ("x", "--warmup: 'x' is not a number of accesses"),
    ):
        p = run_cli("compare", "--trace", str(belady_trace), "--policies", "lru", "--sizes", "3",
                    "--warmup", w)
        assert p.returncode == 2 and p.stderr.startswith(f"vmemsim: error: {msg}"), p.stderr


def test_api_warmup() -> None:
    r = vmemsim.replay(BELADY, policy="fifo", frames=3, warmup=4)
    assert (r.accesses, r.faults, r.warmup, r.to_dict()["warmup"]) == (8, 5, 4, 4)
    assert vmemsim.replay(BELADY, policy="fifo", frames=3).warmup == 0
    with pytest.raises(vmemsim.VmemsimError, match="warmup: expected a whole number"):
        vmemsim.replay(BELADY, policy="fifo", frames=3, warmup=-1)
    for policy in ("fifo", "opt"):  # the streamed path and OPT's whole-trace path
        with pytest.raises(vmemsim.VmemsimError, match=(
            r"^warmup: 12 accesses take the whole trace \(12 accesses\), leaving nothing"
        )):
            vmemsim.replay(BELADY, policy=policy, frames=3, warmup=12)


# ---------------------------------------------------------------- JSON, reader options


def test_json_fields(belady_trace: Path) -> None:
    r = run_json("compare", "--trace", str(belady_trace), "--policies", "fifo,lru,mglru",
                 "--sizes", "3,80%", "--seed", "7", "--workers", "2")
    assert r["command"] == "compare"
    assert (r["accesses"], r["distinct_pages"], r["warmup"], r["seed"]) == (12, 5, 0, 7)
    assert r["version"] == vmemsim.__version__
    assert r["policies"] == ["fifo", "lru", "mglru"]
    assert r["sizes"] == [{"size": "3", "frames": 3}, {"size": "80%", "frames": 4}]
    assert "no object sizes" in r["byte_miss_ratio"]
    got = [(x["policy"], x["size"], x["frames"]) for x in r["results"]]
    assert got == [
        ("fifo", "3", 3), ("lru", "3", 3), ("mglru", "3", 3),
        ("fifo", "80%", 4), ("lru", "80%", 4), ("mglru", "80%", 4),
    ]
    for x in r["results"]:
        assert x["seed"] == 7 and x["version"] == vmemsim.__version__
        assert x["trace"] == str(belady_trace) and x["error"] is None
        for key in ("options", "watermarks", "page_cluster", "swap", "kernel", "stats",
                    "warmup", "miss_ratio", "major_faults"):
            assert key in x
    # Each result is what `vmemsim replay` gives for the same run.
    one = run_json("replay", "--trace", str(belady_trace), "--policy", "fifo", "--frames", "4",
                   "--seed", "7")
    assert {k: v for k, v in r["results"][3].items() if k not in ("size", "error")} == one


def test_workers_do_not_change_results() -> None:
    args = ("compare", "--trace", "gen:zipf:pages=500,alpha=0.8,n=20000", "--policies",
            "lru,clock-lru,s3fifo", "--sizes", "5%,0.2,50%", "--warmup", "0.1")
    one = run_json(*args, "--workers", "1")
    three = run_json(*args, "--workers", "3")
    assert one.pop("workers") == 1 and three.pop("workers") == 3
    assert one == three
    assert one["trace"].startswith("gen:zipf:") and one["warmup"] == 2000


def test_csv_trace_with_reader_options(tmp_path: Path) -> None:
    # Byte addresses in a CSV column (as replay's --csv/--addresses read them): pages
    # 1 2 3 1 2 3 (4096 bytes a page), a cycle over 3 pages.
    t = tmp_path / "a.csv"
    t.write_text("ts,addr,op\n" + "".join(
        f"{i},{p * 4096 + 8},{'w' if i % 2 else 'r'}\n" for i, p in enumerate([1, 2, 3] * 2)))
    r = run_json("compare", "--trace", str(t), "--csv", "column=addr,op=op", "--addresses",
                 "--policies", "lru", "--sizes", "2,3")
    # 2 frames: LRU misses on every access of a 3-page cycle; 3 frames: only the cold 3.
    assert [(x["frames"], x["faults"]) for x in r["results"]] == [(2, 6), (3, 3)]
    assert r["results"][0]["stats"]["writes"] == 3


# ---------------------------------------------------------------- --out


def test_out_writes_csv_and_figure(tmp_path: Path, belady_trace: Path) -> None:
    out = tmp_path / "cmp" / "sub"
    p = run_cli("compare", "--trace", str(belady_trace), "--policies", "lru,fifo",
                "--sizes", "3,4", "--out", str(out))
    assert p.returncode == 0, p.stderr
    with open(out / "compare.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(cc.CSV_COLUMNS)
    got = [(r["policy"], r["size"], int(r["frames"]), int(r["misses"]), int(r["major_faults"]),
            float(r["miss_ratio"])) for r in rows]
    assert got == [
        ("lru", "3", 3, 10, 5, pytest.approx(10 / 12, abs=1e-6)),
        ("fifo", "3", 3, 9, 4, pytest.approx(9 / 12, abs=1e-6)),
        ("lru", "4", 4, 8, 3, pytest.approx(8 / 12, abs=1e-6)),
        ("fifo", "4", 4, 10, 5, pytest.approx(10 / 12, abs=1e-6)),
    ]
    assert {r["memory_bytes"] for r in rows} == {"12288", "16384"}
    png = (out / "miss_ratio.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert (out / "miss_ratio.svg").read_text().lstrip().startswith("<?xml")


def test_figure_labels_and_colours() -> None:
    rows = [
        cc.Row(p, str(f), f, result=vmemsim.replay(BELADY, policy=p, frames=f))
        for f in (3, 4, 5) for p in ("lru", "fifo", "clock")
    ]
    fig = cc.miss_ratio_figure(rows, "/data/traces/app.vmt", warmup=0)
    (ax,) = fig.axes
    title = ax.get_title()
    assert "app.vmt" in title and "miss_ratio" not in title and "frames" not in title
    assert ax.get_xlabel() == "memory size (4 KiB frames)"
    assert ax.get_ylabel().startswith("miss ratio")
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["lru", "fifo", "clock"]
    colours = [line.get_color() for line in ax.get_lines()]
    assert len(set(colours)) == 3
    # The plotted points are the runs' miss ratios (LRU at 3, 4, 5 frames: 10, 8, 5 of 12).
    lru = ax.get_lines()[0]
    assert list(lru.get_xdata()) == [3, 4, 5]
    assert list(lru.get_ydata()) == pytest.approx([10 / 12, 8 / 12, 5 / 12])
    gen = cc.miss_ratio_figure(rows, "gen:zipf:pages=10,alpha=1,n=5,seed=0", warmup=2)
    assert gen.axes[0].get_title() == (
        "Miss ratio by memory size, a zipf generator trace (warm-up 2 accesses)"
    )


# ---------------------------------------------------------------- memory plan, failed runs


def test_memory_plan() -> None:
    # Three runs of 100 bytes with 250 available: two at once fit.
    w, peak, notes = cc.plan_workers([100, 100, 100], 3, 250)
    assert (w, peak) == (2, 200) and "running 2 at once" in notes[0]
    assert cc.plan_workers([100, 100, 100], 8, None) == (3, 300, [])
    w, _, notes = cc.plan_workers([500, 10], 2, 100)
    assert w == 1 and "the largest run alone needs" in notes[-1]
    # The estimate grows with distinct pages and frames, and OPT holds the whole trace.
    base = cc.estimate_run_bytes("lru", 100, 1000, 10_000)
    assert cc.estimate_run_bytes("lru", 100, 2000, 10_000) - base == 1000 * cc.BYTES_PER_PAGE
    assert cc.estimate_run_bytes("opt", 100, 1000, 10_000) - base == (
        10_000 * cc.OPT_BYTES_PER_ACCESS
    )


def test_a_failed_run_is_a_row_with_its_error() -> None:
    meter = cc._Meter(None, 2, len(BELADY))
    rows = cc.run_all(BELADY, [("lru", "3", 3), ("nope", "3", 3)], warmup=0, seed=0,
                      workers=2, reader={}, meter=meter)
    assert rows[0].result is not None and rows[0].result.faults == 10
    assert rows[1].result is None and "unknown policy 'nope'" in (rows[1].error or "")
    text = cc.format_table(rows, "t", 12, 5, 0, 0, 2, 0.0)
    assert "nope    error: policy: unknown policy 'nope'" in text


def test_help_explains_every_option() -> None:
    p = run_cli("compare", "--help")
    assert p.returncode == 0
    for opt in ("--trace", "--policies", "--sizes", "--warmup", "--json", "--out", "--workers",
                "--seed", "--csv", "--format", "--progress"):
        assert opt in p.stdout
    assert "64MiB" in p.stdout and "fraction" in p.stdout
