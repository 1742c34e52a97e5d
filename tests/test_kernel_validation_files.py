"""The committed page-cache validation (experiments/kernel-validation/data/file-runs.json):
real Linux runs of each file workload on a raw virtio block device, re-compared here with the
simulator as it is now.

Every case must stay within ±5% (widened to the kernel's own repeat spread) on pgpgin,
workingset_refault_file and pgsteal_file. Counters the models do not reach yet are listed in
KNOWN_OFF with the reason found (FILES.md); they are strict xfails, so one that comes within
tolerance fails here until it is taken off the list."""

import importlib.util
import json
from pathlib import Path

import pytest

from vmemsim.validate.workload import make_workload

EXP = Path(__file__).resolve().parent.parent / "experiments" / "kernel-validation"
DATA = EXP / "data" / "file-runs.json"


def _files():
    spec = importlib.util.spec_from_file_location("kv_files", EXP / "files.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


files = _files()
RAW = json.loads(DATA.read_text())["cases"]
KEYS = [(c["name"], c["settings"]["lru"], k) for c in RAW for k in files.tolerance(c["name"])]

#: (workload, LRU, counter) out of tolerance, with the error measured when this was written
#: and the reason (FILES.md). Every entry is a strict xfail.
# The MG-LRU re-read rows were off by +6.6% and +8.0% (a ZONE_DMA island) until the machine
# modelled the guest's two zones (FILES.md, gap 2).
KNOWN_OFF: dict = {
    # A handful of major faults: the kernel's three runs took 5, 4 and 7 (mean 5.3, spread
    # 28%), vmemsim 7 (+31%), the faults where the sequential reader caught up with its
    # readahead window (FILES.md).
    ("mmap-seq-2x", "classic", "pgmajfault"): "7 against the kernel's 5, 4 and 7: +31%",
    # Random rewrites: the kernel evicts more (FILES.md, gap 10). Its buffer heads
    # (block_write_begin → create_page_buffers: reclaimable slab; reads through mpage make
    # none) steal pageblocks and boost the watermarks, and the boosted kswapd runs reclaim
    # ZONE_DMA's pages out of LRU order (classic pgskip_dma32 31,164-46,952, MG-LRU pgrefill
    # ~3,000), which the writer then re-creates. vmemsim has the buffer heads, the xarray
    # nodes and their boosts, but fewer boosted runs' evictions than the kernel.
    ("rand-write-1.25x", "classic", "pgsteal_file"): "17,572 against 23,172: -24.2%",
    ("rand-write-1.25x", "mglru", "pgsteal_file"): "17,856 against 25,265: -29.3%",
    ("rand-write-2x", "classic", "pgsteal_file"): "40,506 against 42,894: -5.6%",
    ("rand-write-2x", "mglru", "pgsteal_file"): "40,384 against 43,131: -6.4%",
}
#: Beyond the 2-3x rule, kept for what it shows: the random rewrites of a device only 1.25x
#: the free memory, where most writes find their page cached and dirty pages reach reclaim.
SMALL = ("rand-write-1.25x",)


@pytest.fixture(scope="module")
def loaded():
    return {(n, c.settings["lru"]): c for n, c in files.load_cases()}


def test_the_file_matrix_covers_each_workload_under_both_lrus():
    got = {(c["name"], c["settings"]["lru"]) for c in RAW}
    assert got == {(n, lru) for n in files.WORKLOADS for lru in files.LRUS}
    for c in RAW:
        assert len(c["kernel_runs"]) >= 2
        w = make_workload(c["spec"], seed=c["seed"])
        assert c["settings"]["swap"] == "none"
        for r in c["kernel_runs"]:
            assert r["kernel"].startswith("linux-image-") and r["release"].startswith("6.1.")
            assert len(r["log_sha256"]) == 64
            assert r["workload"] == w.key
            # The guest's device: the workload's size, virtio-blk's readahead window.
            assert r["blockdev"]["size"] * 512 == w.disk_bytes()
            assert r["blockdev"]["read_ahead_kb"] == 128
            # The device is 2-3x the memory the kernel had free.
            free = r["vmstat_before"]["nr_free_pages"]
            lo = 1.2 if c["name"] in SMALL else 2
            assert lo <= w.disk_bytes() / 4096 / free <= 3, (c["name"], free)


@pytest.mark.parametrize("key", KEYS, ids=["/".join(k) for k in KEYS])
def test_counter_within_tolerance(loaded, key, request):
    if key in KNOWN_OFF:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_OFF[key]))
    name, lru, counter = key
    row = loaded[(name, lru)].row(counter)
    assert files.within(row, files.tolerance(name)), \
        f"{key}: {row.error * 100:+.1f}% (kernel {row.kernel}, vmemsim {row.vmemsim})"


def test_mglru_activations_follow_61s_rules(loaded):
    """MG-LRU's WORKINGSET_ACTIVATE: 6.1 counts refaults whose shadow is from the current
    min_seq (and sort_folio's protections), 6.8 every refault within MAX_NR_GENS of max_seq;
    under 6.1's rules vmemsim is within a few dozen pages of the kernel."""
    for (name, lru), c in loaded.items():
        if lru != "mglru":
            continue
        r = c.row("workingset_activate_file")
        assert abs(r.vmemsim - r.mean) <= max(50, 0.3 * r.mean), (name, r.kernel, r.vmemsim)


def test_with_zone_dma_closed_to_the_cache_the_reads_match():
    """The causal check of gaps 2 and 6 (FILES.md): with vm.lowmem_reserve_ratio's ZONE_DMA
    entry at 1 the kernel's page cache lives in ZONE_DMA32 alone, and vmemsim on ZONE_DMA32's
    free pages is within 0.1% of it on every counter of the sequential re-reads (MG-LRU's
    refaults and classic's pgscan included) and within 1.3% on the random reads."""
    rows = files.dma_rows()
    assert {(r[0], r[1]) for r in rows} == {(n, lru) for n in files.DMA_WORKLOADS
                                            for lru in files.LRUS}
    for name, lru, free, k, kern, v, err in rows:
        assert abs(err) <= (0.005 if name.startswith("seq") else 0.02), (name, lru, k, kern, v)


def test_dirty_folios_reclaim_meets_are_left_to_the_flusher(loaded):
    """The random rewrites, where reclaim meets dirty page-cache folios (Linux 6.1
    `shrink_folio_list`, `sort_folio`, `folio_end_writeback`): the kernel's kswapd never wrote
    one (`nr_vmscan_write` 0 in every run), its classic LRU marked and activated them
    (`nr_vmscan_immediate_reclaim` ≈ `pgactivate`) and the flusher's writes rotated 96-101%
    of as many (`pgrotated`), and MG-LRU rotated as many without counting them immediate.
    vmemsim: the same zeros, and the same proportion of rotations to markings; its counts
    are lower, mostly for the kernel's watermark boost (FILES.md, gaps 9 and 10)."""
    for name in ("rand-write-1.25x", "rand-write-2x"):
        classic, mglru = loaded[(name, "classic")], loaded[(name, "mglru")]
        for c in (classic, mglru):
            assert c.row("nr_vmscan_write").kernel == [0] * len(c.runs)
            assert c.row("nr_vmscan_write").vmemsim == 0
        imm, rot = classic.row("nr_vmscan_immediate_reclaim"), classic.row("pgrotated")
        ratios = [r / i for r, i in zip(rot.kernel, imm.kernel)]
        assert 0.95 <= min(ratios) and max(ratios) <= 1.01, ratios
        assert imm.vmemsim > 0 and 0.95 <= rot.vmemsim / imm.vmemsim <= 1.0, (imm, rot)
        assert classic.row("pgactivate").vmemsim == imm.vmemsim
        assert mglru.row("nr_vmscan_immediate_reclaim").vmemsim == 0
        assert mglru.row("pgrotated").vmemsim > 0 and min(mglru.row("pgrotated").kernel) > 0


#: Rows of the boost-off check beyond 5%, as measured when this was written: since the
#: per-CPU page lists (FINDINGS.md, fix 17) vmemsim's free pages leave out what the lists
#: hold, and with the boost off it evicts a little more at 1.25x under MG-LRU.
BOOST0_OFF = {
    ("rand-write-1.25x", "mglru", "pgsteal_file"): "17,152 against 16,310 and 16,310: +5.2%",
}


def test_without_the_watermark_boost_the_rewrites_evict_as_vmemsim_does():
    """Gap 10's causal check (FILES.md; data/file-runs-boost0.json): with
    `vm.watermark_boost_factor` = 0 (in the kernel and in vmemsim) the random rewrites'
    evictions agree within the issue's 5%, and the gap on pgsteal_file and pgpgout is
    smaller than with the boost on, every workload and LRU."""
    for name, lru, k, on, v_on, off, v_off in files.boost0_rows():
        if k not in ("pgsteal_file", "pgpgout"):
            continue
        mean_on, mean_off = sum(on) / len(on), sum(off) / len(off)
        err_on, err_off = abs(v_on - mean_on) / mean_on, abs(v_off - mean_off) / mean_off
        if (name, lru, k) in BOOST0_OFF:
            # (strict: a row that comes back within 5% fails here until it is taken off)
            assert err_off > 0.05, (name, lru, off, v_off, BOOST0_OFF[(name, lru, k)])
        elif k == "pgsteal_file":
            assert err_off <= 0.05, (name, lru, off, v_off)
        assert err_off < err_on, (name, lru, k, on, v_on, off, v_off)
