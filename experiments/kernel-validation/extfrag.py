"""The page allocator's fallbacks between migratetypes in the real kernel, traced
(``kmem:mm_page_alloc_extfrag``), against vmemsim's (``extfrag``) on the same cases.

    python experiments/kernel-validation/extfrag.py run      (boots each case once, ~30 s each)
    python experiments/kernel-validation/extfrag.py table    (data/extfrag-probe.json vs vmemsim now)

Each boot is a run of the matrix's case (data/kernel-runs.json: its workload and settings)
with the trace event enabled just before the phase (after swapon) and the trace printed after
it; the events are counted by (allocation order, allocation migratetype, fallback
migratetype, whether the fallback chunk was below a pageblock, i.e. whether it called
``boost_watermark``, and ``change_ownership``). Tracing slows the guest and the kernel
package is whatever apt offers now (its version is recorded), so the runs' other counters
are not the matrix's; only the fallbacks are compared. vmemsim's side is the matrix's
replay (``matrix.load_cases``) of the committed case.
"""

import argparse
import hashlib
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import matrix  # noqa: E402

OUT = HERE / "data" / "extfrag-probe.json"
CASES = [
    ("zipf-0.9", "disk-pc0", "classic"), ("zipf-0.9", "disk-pc0", "mglru"),
    ("zipf-1.2", "disk-pc0", "classic"), ("zipf+scan", "disk-pc0", "classic"),
    ("memcached", "disk-pc0", "classic"),
    ("zipf-1.2-1.3x", "disk-pc0", "classic"), ("zipf-1.2-1.3x", "disk-pc0", "mglru"),
    ("stress-ng", "disk-pc3", "classic"), ("loop", "zram", "classic"),
]
EVENT = re.compile(
    r"pfn=0x([0-9a-f]+) alloc_order=(\d+) fallback_order=(\d+) pageblock_order=(\d+) "
    r"alloc_migratetype=(\d+) fallback_migratetype=(\d+) fragmenting=\d+ change_ownership=(\d+)")
MT = ["unmovable", "movable", "reclaimable"]


def _case(key):
    for c in json.loads(matrix.DATA.read_text())["cases"]:
        if (c["name"], c["swap_label"], c["settings"]["lru"]) == key:
            return c
    raise SystemExit(f"no case {key}")


def boot(key) -> dict:
    """One traced kernel run of matrix case ``key``."""
    from vmemsim.validate import kernel as K
    from vmemsim.validate.workload import make_workload

    c = _case(key)
    w = make_workload(matrix.resolve(c["spec"]), mode=c["mode"], seed=c["seed"])
    plain_sysctl, plain_after = K.sysctl_lines, dict(K.AFTER)
    # The trace on just before the phase (after swapon), printed after it.
    K.sysctl_lines = lambda s: plain_sysctl(s) + (
        "mount -t tracefs nodev /sys/kernel/tracing\n"
        "echo 8192 > /sys/kernel/tracing/buffer_size_kb\n"
        "echo 1 > /sys/kernel/tracing/events/kmem/mm_page_alloc_extfrag/enable\n")
    for k in K.AFTER:
        K.AFTER[k] += ("\necho @@trace-begin\ngrep -v '^#' /sys/kernel/tracing/trace\n"
                       "echo @@trace-end\n")
    try:
        kern = K.fetch_kernel()
        with tempfile.TemporaryDirectory() as t:
            log = Path(t) / "serial.log"
            r = K.run_kernel(kern, w, K.Settings(**c["settings"]), keep_log=log,
                             progress=lambda line: print(f"[{' '.join(key)}] {line}",
                                                         file=sys.stderr, flush=True))
            text = log.read_text(errors="replace")
    finally:
        K.sysctl_lines = plain_sysctl
        K.AFTER.clear()
        K.AFTER.update(plain_after)
    trace = text.split("@@trace-begin")[1].split("@@trace-end")[0]
    n = Counter()
    for pfn, ao, fo, pb, am, fm, co in EVENT.findall(trace):
        # ZONE_DMA is the first 16 MiB: pfns below 4,096.
        zone = "DMA" if int(pfn, 16) < 4096 else "DMA32"
        n[f"{zone}: order {ao} {MT[int(am)]} from {MT[int(fm)]}"
          f"{' (boost)' if int(fo) < int(pb) else ''}{' claimed' if co == '1' else ''}"] += 1
    return dict(case=list(key), kernel=r.kernel, release=r.release,
                log_sha256=hashlib.sha256(text.encode()).hexdigest(),
                fallbacks=sum(n.values()),
                boosting=sum(v for k, v in n.items() if "(boost)" in k),
                by_kind=dict(sorted(n.items())),
                pgmajfault=r.vmstat.get("pgmajfault"),
                nr_slab_reclaimable=r.vmstat.get("nr_slab_reclaimable"))


def run(only=None) -> None:
    """Boot the cases (``only``: those named ``workload/swap/lru``) and keep the others'
    runs already in the data."""
    old = {tuple(r["case"]): r for r in json.loads(OUT.read_text())["runs"]} if OUT.exists() else {}
    for k in CASES:
        if only is None or "/".join(k) in only:
            old[k] = boot(k)
    OUT.write_text(json.dumps({"runs": [old[k] for k in CASES if k in old]}, indent=1))


def table() -> str:
    runs = json.loads(OUT.read_text())["runs"]
    only = {tuple(r["case"]) for r in runs}
    sim = {(n, l, c.settings["lru"]): c.sim.get("stats", c.sim)
           for n, l, c in matrix.load_cases(only=only)}
    lines = ["| workload | swap | LRU | kernel fallbacks (boosting) | kernel boosting, ZONE_DMA / "
             "ZONE_DMA32 | of them order-1 reclaimable / unmovable | vmemsim fallbacks "
             "(boosting) | vmemsim boosting, ZONE_DMA / ZONE_DMA32 |",
             "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        s = sim[tuple(r["case"])]
        k = r["by_kind"]
        def count(pred):
            return sum(v for x, v in k.items() if "(boost)" in x and pred(x))
        dma, dma32 = count(lambda x: x.startswith("DMA:")), count(lambda x: x.startswith("DMA32:"))
        rec = count(lambda x: "order 1 reclaimable" in x)
        unm = count(lambda x: "unmovable from" in x)
        zb = s.get("watermark_boosts_zone") or [0, 0]
        lines.append(f"| {' | '.join(r['case'])} | {r['fallbacks']} ({r['boosting']}) | "
                     f"{dma} / {dma32} | {rec} / {unm} | {s.get('extfrag')} "
                     f"({s.get('watermark_boosts')}) | {zb[0]} / {zb[1]} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["run", "table"])
    ap.add_argument("--only", nargs="*", help="cases to boot, as workload/swap/lru")
    a = ap.parse_args()
    if a.what == "run":
        run(a.only)
    print(table())


if __name__ == "__main__":
    main()
