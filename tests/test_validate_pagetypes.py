"""/proc/pagetypeinfo before the workload phase: the harness prints it, parse_log reads each
zone's free lists by migratetype and order and its pageblocks per migratetype into
KernelRun.pagetypes, kernel_zones hands them to the simulator, and the committed matrix's
runs (recorded without it) get them from experiments/kernel-validation/data/pagetypes.json."""

import importlib.util
import json
from pathlib import Path

import pytest

from vmemsim.api import VmemsimError
from vmemsim.validate import compare as C
from vmemsim.validate import kernel as K
from vmemsim.validate import workload as W

DATA = Path(__file__).parent / "data" / "validate"
LOG = DATA / "serial-mglru-zram.log"
LOG_SPEC = "gen:zipf:pages=12000,alpha=0.9,n=30000"
LOG_SETTINGS = K.Settings(mem_mib=96, swap="zram", lru="mglru", page_cluster=0)
EXP = Path(__file__).resolve().parent.parent / "experiments" / "kernel-validation"

#: The block as Linux 6.1 (Debian's 6.1.0-56) printed it in a 160 MiB guest.
PAGETYPEINFO = """\
Page block order: 9
Pages per block:  512

Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 
Node    0, zone      DMA, type    Unmovable      0      0      0      0      0      1      1      1      0      0      0 
Node    0, zone      DMA, type      Movable      0      0      0      0      0      0      0      0      0      1      3 
Node    0, zone      DMA, type  Reclaimable      0      0      0      0      0      0      0      0      0      0      0 
Node    0, zone      DMA, type   HighAtomic      0      0      0      0      0      0      0      0      0      0      0 
Node    0, zone      DMA, type      Isolate      0      0      0      0      0      0      0      0      0      0      0 
Node    0, zone    DMA32, type    Unmovable      0      0      1      1      0      0      0      0      0      0      0 
Node    0, zone    DMA32, type      Movable      5      6      7      7      7      6      6      6      8      1     10 
Node    0, zone    DMA32, type  Reclaimable      0      0      0      1      0      1      0      0      1      1      0 
Node    0, zone    DMA32, type   HighAtomic      0      0      0      0      0      0      0      0      0      0      0 
Node    0, zone    DMA32, type      Isolate      0      0      0      0      0      0      0      0      0      0      0 

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate 
Node 0, zone      DMA            1            7            0            0            0 
Node 0, zone    DMA32           12           54            6            0            0 
"""  # noqa: W291 (the kernel ends each line with a space)

DMA = {"blocks": [1, 7, 0], "free": [[0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0],
                                     [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3],
                                     [0] * 11]}
DMA32 = {"blocks": [12, 54, 6], "free": [[0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0],
                                         [5, 6, 7, 7, 7, 6, 6, 6, 8, 1, 10],
                                         [0, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0]]}


def _log(block: str = PAGETYPEINFO, crlf: bool = True) -> str:
    """The stored serial log with ``block`` where the init script prints it: after the swap
    is on, before the program's output (the console's \\r\\n line ends by default)."""
    text = LOG.read_text()
    head, sep, rest = text.partition("@@swaps\n")
    swaps, _, tail = rest.partition("@@")
    log = head + sep + swaps + "@@pagetypeinfo-before\n" + block + "@@" + tail
    return log.replace("\n", "\r\n") if crlf else log


def _matrix():
    spec = importlib.util.spec_from_file_location("kv_matrix_pt", EXP / "matrix.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_init_script_prints_pagetypeinfo_after_swapon_and_before_the_program():
    init = K.INIT
    assert init.index("{swap_setup}") < init.index('echo "@@pagetypeinfo-before"') \
        < init.index("cat /proc/pagetypeinfo") < init.index("/vmwl --snap")


@pytest.mark.parametrize("crlf", [True, False])
def test_parse_log_reads_the_free_lists_and_pageblocks_by_migratetype(crlf):
    d = K.parse_log(_log(crlf=crlf))
    assert set(d["pagetypes"]) == set(d["zones"]) == {"DMA", "DMA32"}
    assert d["pagetypes"]["DMA"] == DMA
    assert d["pagetypes"]["DMA32"] == DMA32
    # Chunks, not pages: DMA's unmovable chunks of order 5, 6 and 7 are 32 + 64 + 128 pages;
    # DMA32's reclaimable ones of order 3, 5, 8 and 9 are 8 + 32 + 256 + 512.
    assert K.pagetype_pages(d["pagetypes"]["DMA"]) == [224, 512 + 3 * 1024, 0]
    assert K.pagetype_pages(d["pagetypes"]["DMA32"])[2] == 808
    assert K.pagetype_pages(d["pagetypes"]["DMA32"])[0] == 4 + 8
    # The rest of the log reads as before.
    assert d["zones"] == K.parse_log(LOG.read_text())["zones"]


def test_a_log_without_the_block_has_no_pagetypes():
    assert K.parse_log(LOG.read_text())["pagetypes"] is None


def test_only_zones_with_managed_pages_are_kept():
    assert K.parse_pagetypeinfo(PAGETYPEINFO, ["DMA32"]) == {"DMA32": DMA32}
    with pytest.raises(VmemsimError, match="zone Normal"):
        K.parse_pagetypeinfo(PAGETYPEINFO, ["DMA", "DMA32", "Normal"])


def test_a_free_highatomic_page_is_an_error_naming_the_zone_and_type():
    row = "Node    0, zone    DMA32, type   HighAtomic      0"
    bad = PAGETYPEINFO.replace(row, "Node    0, zone    DMA32, type   HighAtomic      1")
    assert bad != PAGETYPEINFO
    with pytest.raises(VmemsimError, match="zone DMA32 has free HighAtomic pages"):
        K.parse_log(_log(bad))
    # Not a zone vmemsim is given: ignored.
    assert K.parse_pagetypeinfo(bad, ["DMA"]) == {"DMA": DMA}


def test_a_highatomic_or_cma_pageblock_or_a_capped_count_is_an_error():
    bad = PAGETYPEINFO.replace("Node 0, zone      DMA            1            7            0"
                               "            0", "Node 0, zone      DMA            1            6"
                               "            0            1")
    with pytest.raises(VmemsimError, match="zone DMA has 1 HighAtomic pageblock"):
        K.parse_pagetypeinfo(bad, ["DMA", "DMA32"])
    # A kernel with CONFIG_CMA prints a CMA column (and row).
    cma = PAGETYPEINFO.replace("HighAtomic      Isolate", "HighAtomic          CMA      Isolate") \
        .replace("zone      DMA            1            7            0            0",
                 "zone      DMA            1            7            0            0            0") \
        .replace("zone    DMA32           12           54            6            0",
                 "zone    DMA32           12           54            6            0            2")
    with pytest.raises(VmemsimError, match="zone DMA32 has 2 CMA pageblock"):
        K.parse_pagetypeinfo(cma, ["DMA", "DMA32"])
    capped = PAGETYPEINFO.replace("type      Movable      5", "type      Movable >100000")
    with pytest.raises(VmemsimError, match="caps"):
        K.parse_pagetypeinfo(capped, ["DMA32"])


def _stored_run(text: str) -> K.KernelRun:
    d = K.parse_log(text)
    d.pop("release")
    d.pop("lru_gen")
    return K.KernelRun(kernel="linux-image-test 1", release="6.1.0-56-amd64", accel="tcg",
                       settings={}, workload="w", lru_gen="0x0007", **d)


def test_pagetypes_survive_the_caches_json_round_trip(tmp_path):
    run = _stored_run(_log())
    assert run.pagetypes == {"DMA": DMA, "DMA32": DMA32}
    path = tmp_path / "results" / "r.json"
    C.save_runs(path, [run])
    (back,) = C.load_runs(path)
    assert back.pagetypes == run.pagetypes
    assert back.to_dict() == run.to_dict()
    # A run cached before the field existed has none.
    old = run.to_dict()
    del old["pagetypes"]
    assert K.KernelRun.from_dict(json.loads(json.dumps(old))).pagetypes is None


def test_a_committed_matrix_run_round_trips_with_pagetypes():
    raw = json.loads((EXP / "data" / "kernel-runs.json").read_text())["cases"][0]["kernel_runs"][0]
    assert "pagetypes" not in raw  # recorded before the harness printed pagetypeinfo
    run = K.KernelRun.from_dict(raw)
    assert run.pagetypes is None
    run.pagetypes = {"DMA": DMA, "DMA32": DMA32}
    back = K.KernelRun.from_dict(json.loads(json.dumps(run.to_dict())))
    assert back.pagetypes == {"DMA": DMA, "DMA32": DMA32}


def test_kernel_zones_carry_the_median_runs_pagetypes(monkeypatch):
    monkeypatch.setattr(C, "_NATIVE_PAGETYPES", True, raising=False)
    monkeypatch.setattr(C, "PAGETYPES", True)
    runs = []
    for extra in (0, 40, 20):  # the median run has 20 more free pages in DMA32
        r = _stored_run(_log())
        r.vmstat_before = dict(r.vmstat_before, nr_free_pages=r.vmstat_before["nr_free_pages"]
                               + extra)
        r.zones = {k: dict(v) for k, v in r.zones.items()}
        r.zones["DMA32"]["free"] = int(r.zones["DMA32"]["free"]) + extra
        r.pagetypes = json.loads(json.dumps(r.pagetypes))
        r.pagetypes["DMA32"]["free"][1][0] = 5 + extra  # tells the runs apart
        runs.append(r)
    zones = C.kernel_zones(runs)
    assert [z["name"] for z in zones] == ["DMA", "DMA32"]
    dma32 = zones[1]
    assert dma32["frames"] == int(runs[2].zones["DMA32"]["free"])
    assert dma32["pagetypes"]["free"][1][0] == 25
    assert dma32["pagetypes"]["blocks"] == [12, 54, 6]
    assert zones[0]["pagetypes"] == DMA
    # The median run without them: no key, even where the others have them.
    runs[2].pagetypes = None
    assert all("pagetypes" not in z for z in C.kernel_zones(runs))
    runs[2].pagetypes = runs[0].pagetypes
    # Off: no key.
    monkeypatch.setattr(C, "PAGETYPES", False)
    assert all("pagetypes" not in z for z in C.kernel_zones(runs))


def test_a_replay_takes_the_zones_pagetypes():
    run = _stored_run(_log())
    zones = C.kernel_zones([run])
    assert all("pagetypes" in z for z in zones)
    w = W.make_workload(LOG_SPEC, "rw", 3)
    res = C.simulate(w, LOG_SETTINGS, [run], seed=3)
    assert res.to_dict()["stats"]["faults"] > 0
    # A malformed one is an error naming the zone.
    bad = dict(zones[0], pagetypes=dict(blocks=[0, 0, 0], free=zones[0]["pagetypes"]["free"]))
    with pytest.raises(VmemsimError, match=r"zones\[0\] \(DMA\)\.pagetypes"):
        C.replay(w.cpu_accesses()[0], policy="clock-lru", zones=[bad] + zones[1:],
                 frames=sum(z["frames"] for z in zones))


def test_pagetypes_json_covers_every_setting_of_the_matrix():
    m = _matrix()
    table = json.loads(m.PAGETYPES.read_text())
    assert table["kernel"].startswith("linux-image-6.1.") and table["release"].startswith("6.1.")
    from vmemsim.validate.compare import parse_mem

    want = {m.pagetype_setting(parse_mem(mem), swap)
            for _, _, _, mem, _, swap, _ in m.cases()}
    assert want == {"160M/disk", "160M/ssd", "160M/zram", "96M/disk", "96M/ssd", "96M/zram"}
    assert want <= set(table["settings"])
    for key, zones in {**table["settings"], **table["by_swap_size"]}.items():
        mem = int(key.split("M/")[0])
        assert set(zones) == {"DMA", "DMA32"}, key
        for z, pt in zones.items():
            assert len(pt["blocks"]) == 3 and [len(r) for r in pt["free"]] == [11, 11, 11]
            # Every pageblock of the zone has a type: DMA spans 16 MiB, DMA32 the rest.
            spans = {"DMA": 16, "DMA32": mem - 16}
            assert sum(pt["blocks"]) * 2 == spans[z], (key, z)
            assert sum(K.pagetype_pages(pt)) <= sum(pt["blocks"]) * 512


@pytest.mark.parametrize("name", ["kernel-runs.json", "boost0-runs.json"])
def test_every_committed_run_gets_pagetypes_from_its_setting(name):
    m = _matrix()
    table = json.loads(m.PAGETYPES.read_text())
    for c in json.loads((EXP / "data" / name).read_text())["cases"]:
        runs = m.fill_pagetypes([K.KernelRun.from_dict(r) for r in c["kernel_runs"]])
        for r in runs:
            assert r.pagetypes is not None and set(r.pagetypes) == set(r.zones)
            key = m.pagetype_setting(r.settings["mem_mib"], r.settings["swap"],
                                     m.run_swap_mib(r))
            assert key in table["by_swap_size"], key
            assert r.pagetypes == table["by_swap_size"][key]


def test_fill_pagetypes_keeps_a_runs_own(tmp_path):
    m = _matrix()
    run = _stored_run(_log())
    run.settings = {"mem_mib": 160, "swap": "disk"}
    own = json.loads(json.dumps(run.pagetypes))
    m.fill_pagetypes([run])
    assert run.pagetypes == own
    run.pagetypes = None
    assert m.fill_pagetypes([run], path=tmp_path / "none.json")[0].pagetypes is None
    m.fill_pagetypes([run])
    assert run.pagetypes is not None and set(run.pagetypes) == set(run.zones)
