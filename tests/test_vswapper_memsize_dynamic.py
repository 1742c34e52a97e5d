"""experiments/vswapper's memsize.py (Figs. 11-13) and dynamic.py (Fig. 14) end to end at small
scale, checked against properties derived by hand from their setup, not against their own
output."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "experiments" / "vswapper"


def _load(name: str):
    sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(f"vswapper_{name}", HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MEM_SCALE = 32
CONFIGS = ["baseline", "balloon", "vswapper"]


@pytest.fixture(scope="module")
def memsize(tmp_path_factory):
    ms = _load("memsize")
    out = tmp_path_factory.mktemp("memsize") / "memsize.json"
    assert ms.main(["run", "--scale", str(MEM_SCALE), "--configs", ",".join(CONFIGS),
                    "--out", str(out)]) == 0
    return ms, out, json.loads(out.read_text())


def test_memsize_runs_the_paper_grid_at_the_sizes_asked(memsize):
    ms, _, res = memsize
    meta, runs = res["meta"], res["runs"]
    assert meta["mem_mib"] == [512, 448, 384, 320, 256, 192]
    assert len(runs) == 3 * 6 * 3 == meta["runs"]
    for r in runs:
        assert r["version"] == meta["version"] and r["seed"] == 0
        assert r["run_config"]["workload"] == [r["spec"]]
        kw = r["kwargs"]
        # 512 MiB / 32 = 16 MiB = 4,096 frames believed; the host gives m / 32 MiB.
        assert kw["guest_frames"] == 4096
        assert kw["host_frames"] == r["mem_mib"] * 256 // 32
        # A static balloon of (512 - m) / 32 MiB: 192 MB -> 10 MiB; none at 512 MB.
        ballooned = r["config"] == "balloon" and r["mem_mib"] < 512
        assert r["run_config"]["balloon"] == ballooned
        if ballooned:
            assert kw["balloon_size_mib"] == (512 - r["mem_mib"]) // 32
            assert r["balloon"]["actual_pages"] == kw["balloon_size_mib"] * 256
    assert {r["kwargs"]["host_frames"] for r in runs} == {4096, 3584, 3072, 2560, 2048, 1536}


def test_with_all_its_memory_the_guest_runs_alike_in_every_configuration(memsize):
    # At 512 MB the balloon is empty (the balloon configuration is the baseline's run), and
    # kernbench's builds (31 units of 2 MiB, two at a time, and a 62-header tree at this
    # scale) fit in the host's 16 MiB: the host never reclaims, so the Mapper has nothing
    # to drop and the Preventer no swapped-out page to write: the same runtime.
    ms, _, res = memsize
    t = ms.table(res["runs"], "fig12")
    assert all(ms.host_scanned(t[(c, 512)]) == 0 for c in CONFIGS)
    assert len({t[(c, 512)]["runtime_ns"] for c in CONFIGS}) == 1
    # Less memory cannot make a build faster.
    for c in CONFIGS:
        assert all(t[(c, m)]["runtime_ns"] >= t[(c, 512)]["runtime_ns"] for m in ms.MEM_MIB)


def test_the_figures_counters_by_hand(memsize):
    ms, _, _ = memsize
    r = {"devices": {"host_swap": {"read_requests": 3, "write_requests": 4, "pages_read": 9,
                                   "pages_written": 10},
                     "image": {"read_requests": 5, "write_requests": 0, "pages_read": 40,
                               "pages_written": 0},
                     "guest_swap": {"read_requests": 1, "write_requests": 2,
                                    "pages_read": 1, "pages_written": 6}},
         "host": {"pgscan_kswapd": 100, "pgscan_direct": 23}, "balloon": None}
    assert ms.disk_ops(r) == 3 + 4 + 5 + 1 + 2
    assert ms.written_sectors(r) == 8 * (10 + 6)
    assert ms.host_scanned(r) == 123
    t = {("a", 448): {"runtime_ns": 110, "balloon": None},
         ("b", 448): {"runtime_ns": 100, "balloon": None},
         ("a", 192): {"runtime_ns": 300, "balloon": None},
         ("b", 192): {"runtime_ns": 150, "balloon": {"oom_killed": True}}}
    assert ms.ratio_range(t, "a", "b", [448]) == (1.1, 1.1)
    # A killed run is left out of a ratio.
    assert ms.ratio_range(t, "a", "b", [448, 192]) == (1.1, 1.1)
    assert ms.ratio_range(t, "a", "b", [192]) is None


def test_the_section_lists_every_claim_of_the_figures_run(memsize, tmp_path):
    ms, out, _ = memsize
    text = ms.section(str(out), str(tmp_path))
    for fig in ("fig11", "fig12", "fig13"):
        assert (tmp_path / f"{fig}.png").exists()
    assert "| Fig. 12a: baseline at 192 MB against the whole 512 MB | 1.15x |" in text
    assert "Fig. 13: the ballooned guest kills Eclipse below 448 MB" in text
    # Claims needing a configuration not run (mapper) are not made up.
    assert "mapper within" not in text


def test_memsize_refuses_unknown_figures():
    ms = _load("memsize")
    with pytest.raises(SystemExit) as e:
        ms.main(["run", "--figures", "fig99"])
    assert e.value.code == 2


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory):
    dy = _load("dynamic")
    out = tmp_path_factory.mktemp("dynamic") / "dynamic.json"
    assert dy.main(["run", "--scale", "64", "--guests", "2", "--configs", "balloon,baseline",
                    "--out", str(out)]) == 0
    return dy, out, json.loads(out.read_text())


def test_guests_start_ten_seconds_apart(dynamic):
    dy, _, res = dynamic
    runs = res["runs"]
    assert len(runs) == 2 * 2
    for r in runs:
        assert r["run_config"]["workload"] == r["specs"]
        assert r["kwargs"]["guest_frames"] == 2048 * 256 // 64
        assert r["kwargs"]["host_frames"] == 8192 * 256 // 64
        assert r["kwargs"]["host_cpus"] == 12
        assert r["run_config"]["mom"] == (r["config"] == "balloon")
        assert [g["start_ns"] for g in r["per_guest"]] == [
            i * 10_000_000_000 for i in range(r["guests"])]
        for i, g in enumerate(r["per_guest"]):
            assert f"start_ns={i * 10_000_000_000}," in r["specs"][i]
            assert g["runtime_ns"] == g["end_ns"] - g["start_ns"] > 0
        # The run ends with its last guest.
        assert r["runtime_ns"] == max(g["end_ns"] for g in r["per_guest"])


def test_mom_does_nothing_before_its_first_evaluation(dynamic):
    # MOM's policy engine first evaluates at 10 s (`policy-engine-interval`); one guest of
    # 32 MiB at 1/64 scale finishes well before, so its balloon never moves and the run is
    # the baseline's.
    dy, _, res = dynamic
    t = {(r["config"], r["guests"]): r for r in res["runs"]}
    one = t[("balloon", 1)]["per_guest"][0]
    assert one["end_ns"] < 10_000_000_000
    assert t[("balloon", 1)]["runtime_ns"] == t[("baseline", 1)]["runtime_ns"]
    assert one["balloon_actual_pages"] == 0


def test_the_dynamic_section(dynamic, tmp_path):
    dy, out, _ = dynamic
    text = dy.section(str(out), str(tmp_path))
    assert (tmp_path / "fig14.png").exists()
    assert "| 1 | " in text and "| 2 | " in text
