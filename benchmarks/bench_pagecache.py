"""Replay speed of file I/O through the page cache (`vmemsim.replay` of an MSR Cambridge /
SNIA block trace, imported with `vmemsim.import_trace`): records per second, and the page
cache's counters, for each policy that models the page cache.

    python benchmarks/bench_pagecache.py [--rows 1000000] [--repeat 3] [--dd-mib 256]

The trace is generated here, seeded, in the MSR layout (timestamp, host, disk, type, offset,
size, response time): three disks of 4 GiB; each row is a read (70%) or a write of 4 KiB to
64 KiB, either continuing the disk's last request (a sequential run, 60%) or at a
Zipf-distributed 64 KiB-aligned offset. Memory is given in frames as a fraction of the pages
the trace touches. A recorded real program follows when the recorder can run here
(Valgrind and gcc): `dd bs=4k` copying a file of `--dd-mib` MiB (a read and a write record
per 4 KiB, and the program's own accesses to its buffer), replayed in 64 MiB. Wall times are medians of `--repeat` replays in this process (the machine
is noisy: compare rows of one run, not absolute numbers).
"""

from __future__ import annotations

import argparse
import bisect
import os
import random
import statistics
import subprocess
import tempfile
import time

import vmemsim
from vmemsim import recorder

DISKS = 3
DISK_BYTES = 4 << 30


def write_msr(path: str, rows: int, seed: int) -> int:
    """The trace's CSV at `path`; returns the distinct 4 KiB pages it touches."""
    rng = random.Random(seed)
    slots = DISK_BYTES // 65536
    # Zipf(0.9) over the disk's 64 KiB slots by inversion of a precomputed CDF
    weights = [1.0 / (k + 1) ** 0.9 for k in range(slots)]
    total = sum(weights)
    cdf, acc = [], 0.0
    for w in weights:
        acc += w / total
        cdf.append(acc)
    perm = list(range(slots))
    rng.shuffle(perm)
    last = [0] * DISKS
    pages = set()
    t = 128166372003061629
    with open(path, "w") as f:
        for _ in range(rows):
            d = rng.randrange(DISKS)
            size = 4096 * rng.choice((1, 1, 2, 4, 8, 16))
            if rng.random() < 0.6:
                off = last[d]
            else:
                off = perm[min(bisect.bisect_left(cdf, rng.random()), slots - 1)] * 65536
            off = min(off, DISK_BYTES - size)
            last[d] = off + size
            kind = "Read" if rng.random() < 0.7 else "Write"
            t += rng.randrange(1, 20000)
            f.write(f"{t},src,{d},{kind},{off},{size},100\n")
            for p in range(off // 4096, (off + size + 4095) // 4096):
                pages.add((d, p))
    return len(pages)


def replay_rows(label: str, trace: str, frames: int, repeat: int) -> None:
    for policy in ("clock-lru", "mglru", "lru"):
        walls = []
        r = None
        try:
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = vmemsim.replay(trace, policy=policy, frames=frames)
                walls.append(time.perf_counter() - t0)
        except vmemsim.VmemsimError as e:
            print(f"{policy:<11}{label:>8}  refused: {str(e)[:70]}")
            continue
        w = statistics.median(walls)
        s = r.stats
        n = s["file_io"] + r.accesses
        print(f"{policy:<11}{label:>8}{n:>11,}{s['pgpgin']:>12,}{s['pgpgout']:>14,}"
              f"{s['workingset_refault_file']:>11,}{w:>9.3f}{n / w / 1e6:>9.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dd-mib", type=int, default=256)
    a = ap.parse_args()
    print(f"vmemsim {vmemsim.__version__}, {a.rows:,} MSR rows, median of {a.repeat}")
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "msr.csv")
        vmt = os.path.join(tmp, "msr.vmt")
        distinct = write_msr(csv, a.rows, seed=1)
        t0 = time.perf_counter()
        vmemsim.import_trace(csv, vmt, "msr")
        print(f"import: {time.perf_counter() - t0:.2f} s; {distinct:,} distinct pages")
        # records: file I/O records and access records replayed
        print(f"{'policy':<11}{'memory':>8}{'records':>11}{'pgpgin KiB':>12}{'pgpgout KiB':>14}"
              f"{'refault':>11}{'wall s':>9}{'M rec/s':>9}")
        for share in (0.1, 0.5):
            replay_rows(f"{share:.0%}", vmt, max(64, int(distinct * share)), a.repeat)
        why = recorder.available()
        if why:
            print(f"dd: not recorded ({why})")
            return
        src, dst, dd = (os.path.join(tmp, n) for n in ("in.bin", "out.bin", "dd.vmt"))
        rng = random.Random(2)
        with open(src, "wb") as f:
            for _ in range(a.dd_mib):
                f.write(rng.randbytes(1 << 20))
        rec = recorder.record(["dd", f"if={src}", f"of={dst}", "bs=4k"], dd,
                              stderr=subprocess.DEVNULL)
        print(f"dd bs=4k of {a.dd_mib} MiB recorded: {rec.stats['accesses']:,} accesses, "
              f"{rec.stats['io_records']:,} file I/O records; replayed in 64 MiB")
        replay_rows("64MiB", dd, 16384, a.repeat)


if __name__ == "__main__":
    main()
