"""`vmemsim mrc` and `vmemsim.mrc`: the exact LRU curve equals LRU replays at the same sizes,
replayed curves equal single replays, SHARDS at rate 1 is exact, the output contract."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import vmemsim
from conftest import BELADY, run_cli, run_json

SPEC = "gen:mix:(zipf:pages=3000,alpha=0.9,write=0.2)*0.8+(scan:pages=1000,start=3000)*0.2,n=20000"
SIZES = [1, 7, 64, 500, 1500, 3500, 5000]


def test_exact_lru_equals_replay_at_each_size() -> None:
    c = run_json("mrc", "--trace", SPEC, "--seed", "2", "--sizes", ",".join(map(str, SIZES)))
    assert c["method"] == "exact-lru"
    assert [p["frames"] for p in c["points"]] == SIZES
    for p in c["points"]:
        r = run_json("replay", "--trace", SPEC, "--seed", "2", "--policy", "lru",
                     "--frames", str(p["frames"]))
        assert p["misses"] == r["faults"], p
        assert p["miss_ratio"] == pytest.approx(r["faults"] / r["accesses"])


def test_belady_string_by_hand(belady_trace: Path) -> None:
    # LRU on Belady's string: 10 faults with 3 frames, 8 with 4, 5 (cold only) with 5.
    c = run_json("mrc", "--trace", str(belady_trace), "--sizes", "3,4,5")
    assert [(p["frames"], p["misses"]) for p in c["points"]] == [(3, 10), (4, 8), (5, 5)]
    # FIFO by replay: 9 with 3 frames, 10 with 4 (the anomaly).
    c = run_json("mrc", "--trace", str(belady_trace), "--policy", "fifo", "--sizes", "3,4")
    assert c["method"] == "replay"
    assert [p["misses"] for p in c["points"]] == [9, 10]


def test_other_policy_curve_equals_replays() -> None:
    sizes = [50, 400, 2000]
    for workers in ("1", "2"):
        c = run_json("mrc", "--trace", SPEC, "--policy", "clock-lru", "--sizes",
                     ",".join(map(str, sizes)), "--workers", workers)
        assert c["method"] == "replay" and c["workers"] == int(workers)
        got = [p["misses"] for p in c["points"]]
        if workers == "1":
            first = got
        assert got == first
    want = [vmemsim.replay(SPEC, policy="clock-lru", frames=s).faults for s in sizes]
    assert first == want


def test_points_are_log_spaced_up_to_distinct_pages() -> None:
    c = run_json("mrc", "--trace", SPEC, "--points", "8")
    distinct = vmemsim.trace_info(SPEC, reuse=False).distinct_pages
    assert c["distinct_pages"] == distinct
    frames = [p["frames"] for p in c["points"]]
    assert frames[0] == 1 and frames[-1] == distinct and len(frames) <= 8
    assert frames == sorted(set(frames))
    ratios = np.diff(np.log(frames))
    assert ratios.max() < 2 * ratios.min() + 1e-9  # roughly even steps on a log scale
    # With every page resident, only cold misses remain.
    assert c["points"][-1]["misses"] == distinct
    misses = [p["misses"] for p in c["points"]]
    assert misses == sorted(misses, reverse=True)  # LRU's stack property


def test_shards_at_rate_one_is_exact() -> None:
    args = ("mrc", "--trace", SPEC, "--sizes", ",".join(map(str, SIZES)))
    exact = run_json(*args)
    sampled = run_json(*args, "--shards", "1")
    assert sampled["method"] == "shards-lru" and sampled["sampling_rate"] == 1.0
    assert [p["misses"] for p in sampled["points"]] == [p["misses"] for p in exact["points"]]
    # A 10% sample stays close to the exact curve on a trace of 4000 pages.
    approx = run_json(*args, "--shards", "0.1")
    for a, e in zip(approx["points"], exact["points"]):
        if a["frames"] >= 64:
            assert abs(a["miss_ratio"] - e["miss_ratio"]) < 0.1, (a, e)


def test_json_contract_table_and_csv(tmp_path: Path, belady_trace: Path) -> None:
    out = tmp_path / "curve.csv"
    c = run_json("mrc", "--trace", str(belady_trace), "--sizes", "3,4", "--seed", "7",
                 "--csv-out", str(out))
    assert {"policy", "trace", "seed", "version", "points", "method", "accesses"} <= c.keys()
    assert (c["policy"], c["trace"], c["seed"], c["version"]) == (
        "lru", str(belady_trace), 7, vmemsim.__version__)
    assert set(c["points"][0]) == {"frames", "misses", "miss_ratio"}
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(int(r["frames"]), int(r["misses"])) for r in rows] == [(3, 10), (4, 8)]
    assert rows[0]["policy"] == "lru" and float(rows[0]["miss_ratio"]) == pytest.approx(10 / 12)
    p = run_cli("mrc", "--trace", str(belady_trace), "--sizes", "3,4")
    assert p.returncode == 0 and p.stderr == ""
    table = [ln.split() for ln in p.stdout.splitlines()]
    assert ["3", "10", "0.8333"] in table and ["4", "8", "0.6667"] in table


def test_lru_with_options_is_replayed(belady_trace: Path) -> None:
    # Swap readahead changes what LRU faults on, so the stack-distance shortcut is not used.
    c = run_json("mrc", "--trace", str(belady_trace), "--sizes", "3", "--page-cluster", "2")
    assert c["method"] == "replay"
    r = run_json("replay", "--trace", str(belady_trace), "--policy", "lru", "--frames", "3",
                 "--page-cluster", "2")
    assert c["points"][0]["misses"] == r["faults"]


def test_python_api(tmp_path: Path) -> None:
    g = vmemsim.generate(SPEC, seed=2)
    c = vmemsim.mrc(g, sizes=[10, 100])
    assert isinstance(c, vmemsim.MissRatioCurve)
    assert c.frames == [10, 100] and c.trace == g.name and c.accesses == 20000
    assert c.misses == [vmemsim.replay(g, frames=s).faults for s in (10, 100)]
    assert c.to_dict()["points"][1] == {
        "frames": 100, "misses": c.misses[1], "miss_ratio": c.miss_ratios[1]}
    pages = g.to_numpy()
    assert vmemsim.mrc(pages, sizes=[10, 100]).misses == c.misses
    with pytest.raises(vmemsim.VmemsimError, match="sizes"):
        vmemsim.mrc(pages, sizes=[0])
    with pytest.raises(vmemsim.VmemsimError, match="shards"):
        vmemsim.mrc(pages, policy="fifo", shards=0.5, sizes=[3])
    with pytest.raises(vmemsim.VmemsimError, match="workers"):
        vmemsim.mrc(pages, policy="fifo", sizes=[3], workers=0)


def test_to_pandas() -> None:
    pd = pytest.importorskip("pandas")
    df = vmemsim.mrc(BELADY, sizes=[3, 4]).to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert df["misses"].tolist() == [10, 8] and set(df["policy"]) == {"lru"}
