"""The page cache checked against the real kernel: file workloads on a raw virtio block device
x {classic, MG-LRU}, each on the real kernel (repeats per setting) and through vmemsim.

    python experiments/kernel-validation/files.py run [--repeats 2] [--only NAME...]
    python experiments/kernel-validation/files.py table     (each case as `vmemsim validate` prints it)
    python experiments/kernel-validation/files.py dma [--run]  (ZONE_DMA closed to the cache)
    python experiments/kernel-validation/files.py boost0 [--run]  (the rewrites, boost off)
    python experiments/kernel-validation/files.py findings  (the markdown tables of FILES.md)

The guest has 160 MiB and no swap (``--swap none``: only the page cache is reclaimed; the
program's anonymous memory is its one I/O buffer). Its block device /dev/vda is a sparse image
of the workload's size; buffered ``read()``/``pread()``/``write()`` on it go through the
device's page cache (``def_blk_aops``) with readahead, no file system. vmemsim replays the
same calls as the file I/O records of a recorded trace (``vmemsim.validate.workload
.write_file_trace``) with the kernel's free pages and watermarks and the device's
``read_ahead_kb`` (128 in the guest).

`run` boots the kernel for every case not yet in the cache (~/.cache/vmemsim/validate) and
writes data/file-runs.json (every kernel run's counters, settings, kernel version, the block
device as the guest saw it and the serial log's checksum), so the tests and FILES.md use them
without booting. vmemsim follows Linux 6.1's rules where the versions differ (the kernel is
6.1; for these workloads that is MG-LRU's WORKINGSET_ACTIVATE, docs/kernel-6.1-vs-6.8.md A1).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "file-runs.json"

#: name -> (spec, guest RAM). A 160 MiB guest has about 20,050 pages (78 MiB) free before the
#: phase: the 192 MiB device is 2.45x that, the 232 MiB one 2.96x.
WORKLOADS = {
    "seq-read-2x": ("fileread:bytes=192M,bs=64K,passes=2", "160M"),
    # 2.96x: the same ZONE_DMA island (a fixed number of pages) is a smaller share.
    "seq-read-3x": ("fileread:bytes=232M,bs=64K,passes=2", "160M"),
    "rand-read-4k": ("filerand:bytes=192M,bs=4K,n=50000", "160M"),
    "rand-read-16k": ("filerand:bytes=192M,bs=16K,n=20000", "160M"),
    "seq-write": ("filewrite:bytes=192M,bs=64K,passes=1,fsync=1", "160M"),
    # Without the fsync: what is written during the phase is the flusher's (kernel) or
    # reclaim's (vmemsim) alone, and what stays dirty at its end shows.
    "seq-write-nofsync": ("filewrite:bytes=192M,bs=64K,passes=1,fsync=0", "160M"),
    # The device mapped (MAP_SHARED, read-only) and loaded a byte a page: `filemap_fault`'s
    # read-around and fault-around instead of read()'s readahead; pgmajfault counts the
    # faults that had to read.
    "mmap-seq-2x": ("mmapread:bytes=192M,passes=2", "160M"),
    "mmap-rand": ("mmaprand:bytes=192M,n=50000", "160M"),
    # Random 4 KiB pwrite()s, 4 per page of the device on average, no fsync: rewrites of
    # cached pages leave dirty pages anywhere on the LRU lists, so reclaim meets dirty
    # folios (`shrink_folio_list`'s `PG_reclaim` rule; MG-LRU's `sort_folio`), which the
    # writes of the other cases never make it do (nr_vmscan_immediate_reclaim 0 there).
    "rand-write-1.25x": ("filewrand:bytes=100M,bs=4K,n=100000", "160M"),
    "rand-write-2x": ("filewrand:bytes=160M,bs=4K,n=100000", "160M"),
}
LRUS = ("classic", "mglru")
SWAP = "none"
SEED = 1
#: The rules vmemsim follows where Linux versions differ: the kernel's (6.1).
RULES = "6.1"

#: The issue's tolerances for the page cache: |error| per counter, or the kernel's own
#: spread where wider; the mapping workloads add their major faults.
TOLERANCE = {"pgpgin": 0.05, "workingset_refault_file": 0.05, "pgsteal_file": 0.05}
MMAP_TOLERANCE = dict(TOLERANCE, pgmajfault=0.05)


def tolerance(name: str):
    """The counters a case is held to, with their tolerances."""
    return MMAP_TOLERANCE if name.startswith("mmap") else TOLERANCE
#: Rows shown in FILES.md.
ROWS = ["pgpgin", "pgpgout", "workingset_refault_file", "workingset_activate_file",
        "pgscan_file", "pgscan_file-pgskip", "pgsteal_file", "pgscan_direct", "nr_file_pages",
        "nr_dirty", "nr_slab_reclaimable", "nr_vmscan_immediate_reclaim", "nr_vmscan_write",
        "pgrotated", "pgactivate", "pgmajfault", "pgfault"]


def _one(name: str, repeats: int):
    from vmemsim.validate.compare import validate

    spec, mem = WORKLOADS[name]
    out = validate(spec, mem=mem, swap=SWAP, lrus=LRUS, repeats=repeats, seed=SEED,
                   model_kernel=RULES,
                   progress=lambda m: print(f"[{name}] {m}", file=sys.stderr, flush=True))
    return [c.to_dict() for c in out]


def run(repeats: int, only=None) -> None:
    results = json.loads(DATA.read_text()) if DATA.exists() else {"cases": []}
    keep = {(c["name"], c["settings"]["lru"]): c for c in results["cases"]}
    for name in WORKLOADS:
        if only and name not in only:
            continue
        for c in _one(name, repeats):
            keep[(name, c["settings"]["lru"])] = dict(
                name=name, spec=WORKLOADS[name][0], seed=c["seed"], settings=c["settings"],
                kernel=c["kernel"], kernel_runs=c["kernel_runs"],
            )
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps({"cases": sorted(keep.values(), key=lambda c: (
            list(WORKLOADS).index(c["name"]) if c["name"] in WORKLOADS else 99,
            c["settings"]["lru"]))}, indent=1))
        print(f"done: {name}", file=sys.stderr, flush=True)


def load_cases(kernel: str = RULES):
    """Every committed case re-compared with the simulator as it is now, following Linux
    ``kernel``'s rules where versions differ."""
    from vmemsim.validate.compare import compare
    from vmemsim.validate.kernel import KernelRun, Settings
    from vmemsim.validate.workload import make_workload

    out = []
    for c in json.loads(DATA.read_text())["cases"]:
        w = make_workload(c["spec"], seed=c["seed"])
        runs = [KernelRun.from_dict(r) for r in c["kernel_runs"]]
        out.append((c["name"], compare(w, Settings(**c["settings"]), runs, seed=c["seed"],
                                       kernel=kernel)))
    return out


def within(row, tol=None) -> bool:
    """|error| <= max(tolerance, the kernel's spread)."""
    if row.error is None:
        return False
    return abs(row.error) <= max((tol or TOLERANCE)[row.counter], row.spread)


def _fmt(e) -> str:
    return "-" if e is None else f"{e * 100:+.1f}%"


def findings() -> str:
    loaded = load_cases()
    lines = ["| workload | LRU | counter | kernel mean ± spread | vmemsim | error |",
             "|---|---|---|---|---|---|"]
    summary = ["| workload | LRU | free pages | pgpgin | workingset_refault_file | pgsteal_file "
               "| pgmajfault (mapping workloads) | within ±5% |",
               "|---|---|---|---|---|---|---|---|"]
    for name, c in loaded:
        lru = c.settings["lru"]
        tol = tolerance(name)
        for k in ROWS:
            r = c.row(k)
            mark = " **" if k in tol and not within(r, tol) else ""
            lines.append(f"| {name} | {lru} | {k} | {r.mean:,.0f} ± {r.spread * 100:.1f}% | "
                         f"{r.vmemsim:,} | {_fmt(r.error)}{mark} |")
        free = sorted(r.vmstat_before["nr_free_pages"] for r in c.runs)
        ok = all(within(c.row(k), tol) for k in tol)
        maj = _fmt(c.row("pgmajfault").error) if "pgmajfault" in tol else "-"
        summary.append(f"| {name} | {lru} | {free[len(free) // 2]:,} | "
                       + " | ".join(_fmt(c.row(k).error) for k in TOLERANCE)
                       + f" | {maj} | {'yes' if ok else 'no'} |")
    rules68 = ["| workload | workingset_activate_file kernel | vmemsim, 6.1 rules | vmemsim, 6.8 "
               "rules |", "|---|---|---|---|"]
    b = {(n, c.settings["lru"]): c for n, c in load_cases("6.8")}
    for name, c in loaded:
        if c.settings["lru"] != "mglru":
            continue
        r, r68 = c.row("workingset_activate_file"), b[(name, "mglru")].row("workingset_activate_file")
        rules68.append(f"| {name} | {r.mean:,.0f} | {r.vmemsim:,} | {r68.vmemsim:,} |")
    return ("\n".join(summary) + "\n\n" + "\n".join(lines) + "\n\n" + "\n".join(rules68)
            + "\n\n" + residency_table(loaded))


def residency_table(loaded) -> str:
    """After the phase, per kernel run: the device's pages cached (``mincore``) — how many,
    the run holding the last page (the tail of the last pass), the largest other run — and the
    file pages of ZONE_DMA and ZONE_DMA32 (``/proc/zoneinfo``); for a sequential pass, pages
    cached outside the tail are pages reclaim did not reach."""
    lines = ["| workload | LRU | cached pages | tail run | largest other run | "
             "ZONE_DMA file pages | ZONE_DMA32 file pages | pgskip_dma32 |",
             "|---|---|---|---|---|---|---|---|"]
    for name, c in loaded:
        for r in c.runs:
            res = r.resident
            if not res:
                continue
            tail = res[-1]
            other = max(res[:-1], key=lambda x: x[1] - x[0], default=None)
            z = {k: v.get("inactive_file", 0) + v.get("active_file", 0)
                 for k, v in r.zones_after.items()}
            lines.append(
                f"| {name} | {c.settings['lru']} | {sum(b - a for a, b in res):,} | "
                f"[{tail[0]:,}, {tail[1]:,}) | "
                + (f"[{other[0]:,}, {other[1]:,}): {other[1] - other[0]:,}" if other else "-")
                + f" | {z.get('DMA', 0):,} | {z.get('DMA32', 0):,} | "
                f"{r.vmstat.get('pgskip_dma32', 0):,} |")
    return "\n".join(lines)


#: ZONE_DMA closed to the page cache: `vm.lowmem_reserve_ratio`'s first entry (ZONE_DMA's) at
#: 1 makes ZONE_DMA keep all of ZONE_DMA32's managed pages in reserve against allocations
#: that may use ZONE_DMA32, so the cache lives in ZONE_DMA32 alone (one zone, as vmemsim's).
DMA_CLOSED = {"lowmem_reserve_ratio": "1"}
DATA_DMA = HERE / "data" / "file-runs-dma-closed.json"
DMA_WORKLOADS = ("seq-read-2x", "seq-read-3x", "rand-read-4k", "rand-read-16k")


def _run_with_sysctl(names, sysctl, label: str, path: Path, repeats: int) -> None:
    """Boot workloads `names` under both LRUs with the guest's `sysctl` settings and write
    their runs to `path`."""
    from vmemsim.validate.compare import validate

    cases = []
    for name in names:
        spec, mem = WORKLOADS[name]
        out = validate(spec, mem=mem, swap=SWAP, lrus=LRUS, repeats=repeats, seed=SEED,
                       model_kernel=RULES, sysctl=sysctl,
                       progress=lambda m: print(f"[{name} {label}] {m}", file=sys.stderr,
                                                flush=True))
        for c in (x.to_dict() for x in out):
            cases.append(dict(name=name, spec=spec, seed=c["seed"], settings=c["settings"],
                              kernel=c["kernel"], kernel_runs=c["kernel_runs"]))
    path.write_text(json.dumps({"cases": cases}, indent=1))


def run_dma(repeats: int) -> None:
    """The sequential re-reads with ZONE_DMA closed to the page cache (gap 2 of FILES.md)."""
    _run_with_sysctl(DMA_WORKLOADS, DMA_CLOSED, "dma-closed", DATA_DMA, repeats)


def dma_rows():
    """(workload, LRU, ZONE_DMA32 free pages, counter, kernel runs, vmemsim, error) of the
    kernel with ZONE_DMA closed to the page cache against vmemsim on ZONE_DMA32's free pages
    and watermarks (the memory the cache could have)."""
    import statistics

    import vmemsim
    from vmemsim.validate.compare import POLICY, file_trace, read_ahead_kb
    from vmemsim.validate.kernel import KernelRun
    from vmemsim.validate.workload import make_workload

    out = []
    for c in json.loads(DATA_DMA.read_text())["cases"]:
        runs = [KernelRun.from_dict(r) for r in c["kernel_runs"]]
        free = sorted(int(r.zones["DMA32"]["free"]) for r in runs)[len(runs) // 2]
        wm = tuple(min(int(r.zones["DMA32"][k]) - int(r.zones["DMA32"].get("boost", 0))
                       for r in runs) for k in ("min", "low", "high"))
        w = make_workload(c["spec"], seed=c["seed"])
        res = vmemsim.replay(str(file_trace(w)), policy=POLICY[c["settings"]["lru"]],
                             frames=free, watermarks=wm, read_ahead_kb=read_ahead_kb(runs),
                             kernel=RULES, swap="disk")
        st = {**res.to_dict()["policy_counters"], **res.stats}
        for k in ("pgpgin", "workingset_refault_file", "pgsteal_file", "pgscan_file"):
            kern = [int(r.vmstat.get(k, 0)) for r in runs]
            mean = statistics.fmean(kern)
            err = (st[k] - mean) / mean if mean else 0.0
            out.append((c["name"], c["settings"]["lru"], free, k, kern, st[k], err))
    return out


def dma_table() -> str:
    lines = ["| workload | LRU | ZONE_DMA32 free pages | counter | kernel runs | vmemsim | error |",
             "|---|---|---|---|---|---|---|"]
    for name, lru, free, k, kern, v, err in dma_rows():
        lines.append(f"| {name} | {lru} | {free:,} | {k} | {', '.join(f'{x:,}' for x in kern)} "
                     f"| {v:,} | {err * 100:+.1f}% |")
    return "\n".join(lines)


#: The watermark boost off (`vm.watermark_boost_factor` = 0): no fragmenting fallback raises
#: the watermarks, so no boosted kswapd run reclaims ZONE_DMA out of LRU order (gap 10's
#: causal check; vmemsim reads the setting from the runs and models the same).
BOOST0 = {"watermark_boost_factor": "0"}
DATA_BOOST0 = HERE / "data" / "file-runs-boost0.json"
BOOST0_WORKLOADS = ("rand-write-1.25x", "rand-write-2x")
BOOST0_ROWS = ("pgsteal_file", "pgpgout", "nr_vmscan_immediate_reclaim", "pgrotated",
               "nr_dirty")


def run_boost0(repeats: int) -> None:
    """The random rewrites with the watermark boost off (gap 10 of FILES.md)."""
    _run_with_sysctl(BOOST0_WORKLOADS, BOOST0, "boost 0", DATA_BOOST0, repeats)


def boost0_rows():
    """(workload, LRU, counter, kernel runs with the boost, vmemsim with it, kernel runs
    without it, vmemsim without it): the committed runs of both settings re-compared."""
    from vmemsim.validate.compare import compare
    from vmemsim.validate.kernel import KernelRun, Settings
    from vmemsim.validate.workload import make_workload

    def cases(path):
        out = {}
        for c in json.loads(path.read_text())["cases"]:
            if c["name"] not in BOOST0_WORKLOADS:
                continue
            w = make_workload(c["spec"], seed=c["seed"])
            runs = [KernelRun.from_dict(r) for r in c["kernel_runs"]]
            out[(c["name"], c["settings"]["lru"])] = compare(
                w, Settings(**c["settings"]), runs, seed=c["seed"], kernel=RULES)
        return out

    on, off = cases(DATA), cases(DATA_BOOST0)
    rows = []
    for key in sorted(off, key=lambda k: (BOOST0_WORKLOADS.index(k[0]), k[1])):
        for k in BOOST0_ROWS:
            a, b = on[key].row(k), off[key].row(k)
            rows.append((*key, k, a.kernel, a.vmemsim, b.kernel, b.vmemsim))
    return rows


def boost0_table() -> str:
    def err(kern, v):
        m = sum(kern) / len(kern)
        return f"{(v - m) / m * 100:+.1f}%" if m else "-"

    lines = ["| workload | LRU | counter | kernel, boost on | vmemsim | error | kernel, boost off "
             "| vmemsim | error |", "|---|---|---|---|---|---|---|---|---|"]
    for name, lru, k, ka, va, kb, vb in boost0_rows():
        lines.append(f"| {name} | {lru} | {k} | {', '.join(f'{x:,}' for x in ka)} | {va:,} | "
                     f"{err(ka, va)} | {', '.join(f'{x:,}' for x in kb)} | {vb:,} | "
                     f"{err(kb, vb)} |")
    return "\n".join(lines)


def table() -> None:
    from vmemsim.validate.compare import format_case

    for name, case in load_cases():
        print(f"## {name}")
        print(format_case(case))
        print()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--repeats", type=int, default=2)
    r.add_argument("--only", nargs="*", help="workload names")
    sub.add_parser("table")
    sub.add_parser("findings")
    d = sub.add_parser("dma", help="the sequential re-reads with ZONE_DMA closed to the cache")
    d.add_argument("--run", action="store_true", help="boot what is not cached first")
    d.add_argument("--repeats", type=int, default=2)
    b = sub.add_parser("boost0", help="the random rewrites with the watermark boost off")
    b.add_argument("--run", action="store_true", help="boot what is not cached first")
    b.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    if a.cmd == "run":
        run(a.repeats, a.only)
    elif a.cmd == "dma":
        if a.run:
            run_dma(a.repeats)
        print(dma_table())
    elif a.cmd == "boost0":
        if a.run:
            run_boost0(a.repeats)
        print(boost0_table())
    elif a.cmd == "findings":
        print(findings())
    else:
        table()
